"""install.py on a machine with no compiler: the toolchain from PyPI (nodes/native/pypi_toolchain.py), how it
fails (offline PyPI, a full or read-only disk, a second install), and, end to end, a fresh venv of another
Python with nothing but that Python on the PATH whose install leaves a core the nodes load and ask."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, install_module

install = install_module()
tc_mod = install.native_module("pypi_toolchain")


def fake_tree(root: Path):
    """The layout the four wheels leave under pip's --target."""
    exe = tc_mod.EXE
    for rel in (f"ziglang/zig{exe}", f"cmake/data/bin/cmake{exe}", f"bin/ninja{exe}",
                "nlohmann_json/include/nlohmann/json.hpp"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")


def fake_pip(tree_maker):
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        target = Path(cmd[cmd.index("--target") + 1])
        return tree_maker(target)
    run.calls = calls
    return run


def test_pins_are_exact_and_the_folder_follows_them(tmp_path):
    pins = tc_mod.pins()
    assert {p.split("==")[0] for p in pins} == {"ziglang", "cmake", "ninja", "nlohmann-json"}
    assert all("==" in p for p in pins)
    assert tc_mod.tools_dir(tmp_path, pins) != tc_mod.tools_dir(tmp_path, pins[:-1] + ["nlohmann-json==9.9.9"])


def test_ensure_installs_once_into_a_folder_renamed_into_place(tmp_path):
    def ok(target):
        fake_tree(target)
        return subprocess.CompletedProcess([], 0, "", "")
    run = fake_pip(ok)
    tc, why = tc_mod.ensure(tmp_path, run=run)
    assert why is None and tc.zig.is_file() and tc.root == tc_mod.tools_dir(tmp_path)
    cmd = run.calls[0]
    assert "--no-deps" in cmd and ":all:" in cmd and all(p in cmd for p in tc_mod.pins())
    # The second call finds it and runs no pip; no partial folder or lock is left behind.
    tc2, _ = tc_mod.ensure(tmp_path, run=run)
    assert tc2 == tc and len(run.calls) == 1
    assert sorted(p.name for p in (tmp_path / "tools").iterdir()) == [tc.root.name]


@pytest.mark.parametrize("stderr, words", [
    ("ERROR: Could not find a version that satisfies the requirement ziglang==0.17.0 (from versions: none)\n"
     "ERROR: No matching distribution found for ziglang==0.17.0", "PyPI cannot be reached"),
    ("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", "disk is full"),
    ("ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/x'", "cannot be written"),
])
def test_pip_failures_give_one_reason_and_leave_nothing_half_written(tmp_path, stderr, words):
    def fail(target):
        fake_tree(target)  # pip may have unpacked some wheels before it stopped
        (target / f"ziglang/zig{tc_mod.EXE}").unlink()
        return subprocess.CompletedProcess([], 1, "", stderr)
    tc, why = tc_mod.ensure(tmp_path, run=fake_pip(fail))
    assert tc is None and words in why and "\n" not in why
    assert list((tmp_path / "tools").iterdir()) == []  # no partial folder, no lock


def test_a_second_install_is_told_to_wait_and_a_dead_owner_is_taken_over(tmp_path):
    folder = tmp_path / "tools"
    first = tc_mod.Lock(folder)
    assert first.acquire() is None
    busy = tc_mod.Lock(folder).acquire()
    assert busy and "another Headroom install is running" in busy and str(os.getpid()) in busy
    first.release()
    # A lock whose owner is gone is stale.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (folder / ".install.lock").write_text(dead.stdout.strip())
    again = tc_mod.Lock(folder)
    assert again.acquire() is None
    again.release()


def test_a_read_only_build_folder_is_one_line(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only modes")
    tmp_path.chmod(0o500)
    try:
        tc, why = tc_mod.ensure(tmp_path / "build", run=fake_pip(lambda t: None))
    finally:
        tmp_path.chmod(0o700)
    assert tc is None and "cannot write" in why


def test_publish_puts_the_record_last(tmp_path):
    name = tc_mod.library_name()
    built = tmp_path / "built"
    built.mkdir()
    (built / name).write_bytes(b"new library")
    (built / (name + ".record")).write_text('{"size": 11}')
    dest = tmp_path / "capi"
    dest.mkdir()
    (dest / (name + ".record")).write_text("old record")
    order = []
    real_replace = os.replace

    def spy(src, dst):
        order.append(Path(dst).name)
        assert not (dest / (name + ".record")).exists() or Path(dst).name.endswith(".record")
        real_replace(src, dst)
    os.replace, saved = spy, os.replace
    try:
        tc_mod.publish(built, dest, ".record")
    finally:
        os.replace = saved
    assert order == [name, name + ".record"]
    assert (dest / name).read_bytes() == b"new library"


def test_cmake_files_name_zig_and_the_wheels_headers(tmp_path):
    fake_tree(tmp_path / "t")
    tc = tc_mod.locate(tmp_path / "t")
    steps = tc_mod.build_steps(tc, REPO, tmp_path / "tree", 2)
    configure, build = steps
    assert "-DHEADROOM_CORE_ARCHIVE=OFF" in configure and "-DHEADROOM_TORCH=OFF" in configure
    assert build[-4:-2] == ["--target", "headroom_capi"]
    toolchain = (tmp_path / "tree" / "deps" / "zig-toolchain.cmake").read_text()
    assert f'"{tc.zig.as_posix()}" c++' in toolchain
    config = (tmp_path / "tree" / "deps" / "nlohmann_jsonConfig.cmake").read_text()
    assert tc.json_include.as_posix() in config


def test_no_compiler_and_no_pypi_is_one_line_and_the_pack_still_loads(tmp_path):
    """No compiler on the PATH, PyPI unreachable: install.py says so in one line, builds nothing half-way,
    exits 0 (ComfyUI-Manager must not report a failed install for a pack that loads) and says what the
    nodes will do."""
    env = {"PATH": str(tmp_path), "HEADROOM_BUILD_DIR": str(tmp_path / "b"), "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": str(tmp_path / "no-wheels"), "PIP_CONFIG_FILE": os.devnull}
    out = subprocess.run([sys.executable, str(REPO / "install.py")], capture_output=True, text=True, timeout=300,
                         env=env, cwd=str(REPO))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    # The decoders: no wheel for this torch, so exact tiles come from ComfyUI's tiled decode.
    assert "no decoder wheel for torch" in lines[0] and "ComfyUI's tiled decode" in lines[0]
    failed = [ln for ln in lines if "could not get the toolchain" in ln]
    assert len(failed) == 1 and "PyPI cannot be reached" in failed[0] and "install.py" in failed[0]
    assert lines[-1].startswith("Headroom: estimator core: not installed")
    tools = tmp_path / "b" / "tools"
    assert not tools.exists() or list(tools.iterdir()) == []
    assert not (tmp_path / "b" / "capi").exists()


def other_python():
    """A Python of another minor version than the one running the tests (pyenv's), else None."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for minor in ("3.12", "3.13", "3.10"):
        if minor == mine:
            continue
        for candidate in sorted(root.glob(f"{minor}.*")):
            exe = candidate / "bin" / "python3"
            if exe.is_file():
                return exe
    return None


@pytest.mark.skipif(sys.platform != "linux", reason="the fresh-venv install is checked on Linux")
def test_fresh_venv_without_a_compiler_gets_a_core_that_answers(tmp_path):
    """The whole path a Windows-portable or desktop-Linux user takes: a new venv of another Python, nothing
    but that Python on the PATH (no cc, c++, cmake, ninja, ar), `python install.py`, then the nodes' own
    loader finds the core and it answers an estimate."""
    base = other_python()
    if base is None:
        pytest.skip("no second Python (pyenv) on this machine")
    venv = tmp_path / "venv"
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True, timeout=300)
    bin_dir = tmp_path / "only-python"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(venv / "bin" / "python")
    build = tmp_path / "b"
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", str(tmp_path)), "HEADROOM_BUILD_DIR": str(build)}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE", "XDG_CACHE_HOME"):
        if key in os.environ:
            env[key] = os.environ[key]
    started = time.monotonic()
    out = subprocess.run([str(venv / "bin" / "python"), str(REPO / "install.py")], capture_output=True, text=True,
                         timeout=2400, env=env, cwd=str(REPO))
    took = time.monotonic() - started
    print(f"install.py without a compiler: {took:.0f} s\n{out.stdout}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "estimator core built with PyPI's zig" in out.stdout, out.stdout + out.stderr
    assert "estimator core: this pack's build" in out.stdout.splitlines()[-1]
    summary = [ln for ln in out.stdout.splitlines() if ln.startswith("Headroom:")]
    assert 2 <= len(summary) <= 5, summary
    # The nodes' loader (as ComfyUI would run it, in that venv) takes the build and gets an answer.
    ask = ("import importlib.util, json, sys\n"
           f"sys.path.insert(0, {str(REPO)!r})\n"
           f"spec = importlib.util.spec_from_file_location('hp', {str(REPO / '__init__.py')!r}, "
           f"submodule_search_locations=[{str(REPO)!r}])\n"
           "pack = importlib.util.module_from_spec(spec); sys.modules['hp'] = pack; spec.loader.exec_module(pack)\n"
           "from hp.nodes.native import native_loader\n"
           "core = native_loader.core()\n"
           "print(core.estimate(json.dumps({'model': 'flux1-dev', 'width': 1024, 'height': 1024, 'gpu': '4090'})))\n")
    got = subprocess.run([str(venv / "bin" / "python"), "-c", ask], capture_output=True, text=True, timeout=300,
                         env=env, cwd=str(tmp_path))
    assert got.returncode == 0, got.stdout + got.stderr
    answer = json.loads(got.stdout.strip().splitlines()[-1])
    assert answer.get("stages") and answer.get("verdict"), answer
