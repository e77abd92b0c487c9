"""The headroom_core wheel: built by scripts/build_core_wheel.sh (zig c++ for glibc 2.28), installed into a
fresh virtual environment of a *different* Python than the build's, and called there through ctypes.
Its answers must equal those of this checkout's own build of the library (g++ here, zig there: the same
core through two compilers and two Pythons), bad input
must raise ValueError naming the field, and the library must ask for no glibc symbol newer than 2.28."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, native_core_or_none

PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
ZIG_OK = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True).returncode == 0
pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux wheel"),
              pytest.mark.skipif(not ZIG_OK, reason="ziglang is not installed (scripts/deps.sh installs it)")]


def other_python():
    """A pyenv Python of another minor version than this one (the machines have 3.8-3.13)."""
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for v in ("3.13", "3.12", "3.10", "3.9"):
        if v == mine:
            continue
        for d in sorted(PYENV.glob(v + ".*")):
            exe = d / "bin" / "python3"
            if exe.exists():
                return exe
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(["bash", str(REPO / "scripts" / "build_core_wheel.sh"), str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list(out.glob("headroom_core-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    py = other_python()
    if py is None:
        pytest.skip("no pyenv Python of another version to install the wheel into")
    env_dir = tmp_path_factory.mktemp("venv")
    subprocess.run([str(py), "-m", "venv", str(env_dir)], check=True, timeout=300)
    exe = env_dir / "bin" / "python"
    r = subprocess.run([str(exe), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def run_in(exe, code):
    r = subprocess.run([str(exe), "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_wheel_is_py3_none_manylinux_2_28(wheel):
    name = wheel.name
    assert name.startswith("headroom_core-0.1.0-py3-none-") and "manylinux_2_28_x86_64" in name, name
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "headroom_core/__init__.py" in names and "headroom_core/libheadroom_core.so" in names, names
    # The one ctypes client: the pack's, with its check of the library file (issue 25).
    assert "headroom_core/core_capi.py" in names and "headroom_core/binary_check.py" in names, names


def test_library_needs_nothing_newer_than_glibc_2_28(wheel, tmp_path):
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) missing")
    with zipfile.ZipFile(wheel) as z:
        z.extract("headroom_core/libheadroom_core.so", tmp_path)
    lib = tmp_path / "headroom_core" / "libheadroom_core.so"
    symbols = subprocess.run(["objdump", "-T", str(lib)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", symbols)}
    assert versions and max(versions) <= (2, 28), sorted(versions)[-3:]
    needed = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True, check=True).stdout
    libs = set(re.findall(r"NEEDED\s+(\S+)", needed))
    # Only the C library's own parts: no libstdc++ or libgcc_s that a user's system might lack or mismatch.
    assert libs <= {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}, libs


def test_other_python_gets_the_same_answers_as_the_build(venv):
    core = native_core_or_none()
    request = {"model": "flux1-dev", "width": 1024, "height": 1024, "gpu": "4090"}
    got = run_in(venv, "import json, sys, headroom_core\n"
                       f"print(json.dumps({{'v': headroom_core.version(), 'py': sys.version_info[:2],"
                       f" 'est': headroom_core.call('estimate', {request!r}),"
                       f" 'n': len(headroom_core.call('catalog')['models'])}}))")
    assert got["v"] == "0.1.0"
    assert tuple(got["py"]) != sys.version_info[:2]
    assert got["est"]["peak_bytes"] > 0 and got["est"]["verdict"] in ("fits", "tight", "does not fit")
    if core is not None:
        assert got["est"] == json.loads(core.estimate(json.dumps(request)))
        assert got["n"] == len(json.loads(core.catalog())["models"])


def test_bad_input_raises_value_error_naming_the_field(venv):
    got = run_in(venv, "import json, headroom_core\n"
                       "out = {}\n"
                       "for name, req in [('estimate', {'model': 'flux1-dev', 'width': -5}),\n"
                       "                  ('estimate', {'model': 'flux1-dev', 'bogus': 1}),\n"
                       "                  ('nonesuch', {}), ('inspect', {'paths': '/x'})]:\n"
                       "    try:\n"
                       "        headroom_core.call(name, req); out[name + str(len(out))] = 'no error'\n"
                       "    except ValueError as e:\n"
                       "        out[name + str(len(out))] = [str(e), e.field]\n"
                       "print(json.dumps(out))")
    (w_msg, w_field), (b_msg, b_field), (f_msg, f_field), (i_msg, i_field) = got.values()
    assert w_field == "width" and "width" in w_msg
    assert b_field == "bogus" and "bogus" in b_msg
    assert f_field == "function" and "estimate" in f_msg  # lists the functions there are
    assert i_field == "paths"


def test_explain_and_inspect_reach_the_core(venv, tmp_path):
    missing = tmp_path / "nope.safetensors"
    got = run_in(venv, "import json, headroom_core\n"
                       "e = headroom_core.call('explain', {'text': 'torch.OutOfMemoryError: CUDA out of memory. "
                       "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 5.06 MiB is free.'})\n"
                       f"i = headroom_core.call('inspect', {{'paths': [{str(missing)!r}]}})\n"
                       "print(json.dumps({'e': e, 'i': i}))")
    assert got["e"]["recognised"] is True and got["e"]["requested_bytes"] == 20 * 1024 * 1024
    # One answer per path; an unreadable file is reported in its entry, not raised.
    (entry,) = got["i"]
    assert entry["path"] == str(missing) and entry["error_kind"] == "unreadable"


def test_the_nodes_load_the_wheel_checked_against_pips_record(venv, tmp_path):
    """The pack in that other Python, with no build folder, takes the core from the installed wheel after
    checking the file against the hash pip recorded; a library cut short there is refused, not loaded."""
    from test_pack_import import run as run_pack
    code = ("from headroom_pack.nodes.native import native_loader\n"
            "try:\n"
            "    core = native_loader.core(); got = {'where': core.__file__, 'n': len(json.loads(core.catalog())['models'])}\n"
            "except native_loader.NativeUnavailable as e:\n"
            "    got = {'cause': str(e)}\n"
            "print(json.dumps(got))\n")

    def run():
        return run_pack(code, tmp_path / "no-build", timeout=120, python=venv)

    got = run()
    assert "site-packages" in got.get("where", "") and got["n"] > 0, got
    library = Path(got["where"])
    data = library.read_bytes()
    try:
        library.write_bytes(data[: len(data) // 2])
        refused = run()
        assert "corrupt build" in refused.get("cause", "") and str(library) in refused["cause"], refused
    finally:
        library.write_bytes(data)
