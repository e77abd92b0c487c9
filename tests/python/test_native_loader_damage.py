"""Damaged native builds (issue 13, item 3; issue 12, item 6): a truncated, empty, random or crash-on-load
library must never take down the Python that loads the pack (ComfyUI). Each case copies the real built
library (the core's C library in build/capi, the decoder module in build/python) into a temporary build
folder with the record its build wrote (size and SHA-256), damages the copy, and loads the pack in a
fresh Python with limits on time (60 s) and address space (2 GiB): that process must survive and report
"corrupt build: run install.py again" without having loaded the file; a whole library that is not ours
keeps the loader's own message. Loading never starts a process: crashes on load are install.py's to
find, at install time (prove_loads, tested here too)."""
import hashlib
import json
import os
import random
import resource
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import BUILD_DIR, BUILD_PYTHON, REPO, install_module, load_pack

load_pack()
from headroom_pack.nodes.native import binary_check, native_loader  # noqa: E402


def _built(prefix):
    found = sorted(BUILD_PYTHON.glob(prefix + ".*.so")) if BUILD_PYTHON.is_dir() else []
    return found[0] if found else None


CORE_SO = BUILD_DIR / "capi" / "libheadroom_core.so"
CORE_SO = CORE_SO if CORE_SO.is_file() else None
TORCH_SO = _built("_headroom_torch")
needs_core = pytest.mark.skipif(CORE_SO is None, reason="the core library (build/capi) is not built")
needs_torch = pytest.mark.skipif(TORCH_SO is None, reason="_headroom_torch is not built")

LIMIT_S = 60
LIMIT_AS = 2 * 1024 ** 3

LOAD_AND_USE = textwrap.dedent(f"""
    import importlib.util, json, sys
    if {{hide_torch}}:
        sys.modules["torch"] = None  # keeps the child small; the report then says torch is not installed
    spec = importlib.util.spec_from_file_location("headroom_pack", {str(REPO / '__init__.py')!r},
                                                  submodule_search_locations=[{str(REPO)!r}])
    pack = importlib.util.module_from_spec(spec); sys.modules["headroom_pack"] = pack
    spec.loader.exec_module(pack)
    from headroom_pack.nodes.native import native_loader
    try:
        module = native_loader.{{getter}}()
        message = None
        works = bool(module.catalog()) if {{getter!r}} == "core" else callable(module.decode)
    except native_loader.NativeUnavailable as e:
        message, works = str(e), False
    print(json.dumps({{{{"message": message, "works": works, "status": native_loader.status()}}}}))
""")


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def load_in_child(build_dir, getter="core"):
    """Loads the pack with HEADROOM_BUILD_DIR=build_dir in a fresh, limited Python; returns its report.
    Fails the test unless that Python itself exited normally (the ComfyUI it stands for survived)."""
    env = {**os.environ, "HEADROOM_BUILD_DIR": str(build_dir)}
    env.pop("PYTHONPATH", None)
    code = LOAD_AND_USE.format(hide_torch=getter == "core", getter=getter)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=LIMIT_S, cwd="/", preexec_fn=_limits)
    assert out.returncode == 0, f"the loading process died ({out.returncode}): {out.stderr[-2000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def folder_of(source):
    """The build subfolder a library lives in: capi/ for the core, python/ for the decoder module."""
    return "capi" if source == CORE_SO else "python"


def record_of(data):
    return json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})


def damaged_build(tmp_path, source, data, record="original"):
    """A build folder holding `data` under the library's name, with the record of the original file (what
    the build wrote before the damage), of `data` itself ("own"), or none (None)."""
    folder = tmp_path / "build" / folder_of(source)
    folder.mkdir(parents=True)
    (folder / source.name).write_bytes(data)
    if record is not None:
        text = (Path(str(source) + ".record").read_text() if record == "original" else record_of(data))
        (folder / (source.name + ".record")).write_text(text)
    return tmp_path / "build"


def executable_segment(data):
    """(offset, size) of the first executable PT_LOAD segment of a 64-bit little-endian ELF file."""
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, p_flags, p_offset, _v, _p, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:
            return p_offset, p_filesz
    raise AssertionError("no executable segment")


@needs_core
@pytest.mark.parametrize("keep", [0.5, 0.97, -1])
def test_truncated_core_is_a_corrupt_build_and_the_process_survives(tmp_path, keep):
    data = CORE_SO.read_bytes()
    cut = len(data) + keep if keep < 0 else int(len(data) * keep)
    result = load_in_child(damaged_build(tmp_path, CORE_SO, data[:cut]))
    assert "corrupt build" in result["message"] and "run install.py again" in result["message"]
    assert "install.py" in result["message"] and not result["works"]
    assert result["status"]["core"]["available"] is False and "corrupt build" in result["status"]["core"]["cause"]


@needs_core
@pytest.mark.parametrize("content", ["empty", "random", "random-elf"])
def test_empty_or_random_core_is_a_corrupt_build(tmp_path, content):
    rng = random.Random(13)
    data = {"empty": b"", "random": bytes(rng.getrandbits(8) for _ in range(65536)),
            "random-elf": b"\x7fELF\x02\x01\x01" + bytes(rng.getrandbits(8) for _ in range(65536))}[content]
    result = load_in_child(damaged_build(tmp_path, CORE_SO, data))
    assert "corrupt build" in result["message"] and "run install.py again" in result["message"]


def garbage_code(data):
    """The library with its machine code replaced and its headers intact: only loading it could tell."""
    data = bytearray(data)
    offset, size = executable_segment(data)
    rng = random.Random(3)
    data[offset + 64:offset + size] = bytes(rng.getrandbits(8) for _ in range(size - 64))
    return bytes(data)


@needs_core
def test_whole_file_with_garbage_code_is_refused_before_it_is_loaded(tmp_path):
    data = garbage_code(CORE_SO.read_bytes())
    binary_check.check_library(damaged_build(tmp_path, CORE_SO, data) / "capi" / CORE_SO.name)
    result = load_in_child(tmp_path / "build")
    assert "corrupt build" in result["message"] and "changed since its build wrote it" in result["message"]


@needs_core
def test_a_library_without_a_record_is_refused(tmp_path):
    """A file no build and no wheel recorded (copied in by hand, or a link that never finished)."""
    result = load_in_child(damaged_build(tmp_path, CORE_SO, CORE_SO.read_bytes(), record=None))
    assert "not from a finished build" in result["message"] and "install.py" in result["message"]
    assert not result["works"]


def system_library():
    """A whole library of the system (not ours): the C library itself, which every Linux has."""
    for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libc.so.6"):
        if os.path.exists(p):
            return os.path.realpath(p)
    pytest.skip("no system library found")


@needs_core
def test_present_but_foreign_library_keeps_the_loaders_message(tmp_path):
    """A whole library that is not the core (the system's C library under the core's name): what ctypes
    said about it (no headroom_* functions), not "corrupt" and not "not installed"."""
    data = open(system_library(), "rb").read()
    result = load_in_child(damaged_build(tmp_path, CORE_SO, data, record=record_of(data)))
    assert "failed to load" in result["message"] and "undefined symbol: headroom_" in result["message"]
    assert "corrupt build" not in result["message"] and "is not installed" not in result["message"]


@needs_core
def test_intact_copy_loads_and_works(tmp_path):
    result = load_in_child(damaged_build(tmp_path, CORE_SO, CORE_SO.read_bytes()))
    assert result["message"] is None and result["works"]


@needs_torch
def test_truncated_decoder_is_a_corrupt_build_and_the_process_survives(tmp_path):
    data = TORCH_SO.read_bytes()
    result = load_in_child(damaged_build(tmp_path, TORCH_SO, data[:len(data) * 2 // 3]), getter="torch_ops")
    assert "decoder is unavailable" in result["message"] and "corrupt build" in result["message"]
    assert result["status"]["torch"]["available"] is False


@needs_core
def test_loading_starts_no_process_and_a_changed_byte_is_refused(tmp_path, monkeypatch):
    """The registry's scanner flags any process start outside install time, and a process per library
    would slow ComfyUI's start: the check is the record alone. One byte changed (same size) is refused."""
    import subprocess as sp
    build = damaged_build(tmp_path, CORE_SO, CORE_SO.read_bytes())
    so = build / "capi" / CORE_SO.name
    def no_process(*args, **kwargs):
        raise AssertionError(f"a process was started: {args}")
    monkeypatch.setattr(sp, "Popen", no_process)
    assert "subprocess" not in native_loader.__dict__
    assert native_loader._vet(native_loader.CORE_MODULE, so)[1] is None
    with open(so, "r+b") as f:
        f.seek(so.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(so, ns=(so.stat().st_atime_ns, so.stat().st_mtime_ns + 10 ** 9))
    assert "changed since its build wrote it" in native_loader._vet(native_loader.CORE_MODULE, so)[1]


@needs_core
def test_install_proves_each_build_loads_and_unrecords_one_that_crashes(tmp_path):
    """install.py loads what it built in a child Python; a library that crashes it loses its record, so the
    nodes refuse it instead of crashing ComfyUI; a whole one keeps it."""
    install = install_module()
    good = damaged_build(tmp_path / "good", CORE_SO, CORE_SO.read_bytes())
    assert install.prove_loads(good) == []
    assert (good / "capi" / (CORE_SO.name + ".record")).is_file()
    data = garbage_code(CORE_SO.read_bytes())
    bad = damaged_build(tmp_path / "bad", CORE_SO, data, record=record_of(data))
    ((path, why),) = install.prove_loads(bad)
    assert path.name == CORE_SO.name and "crashed the Python that loaded it" in why
    assert not (bad / "capi" / (CORE_SO.name + ".record")).exists()
    assert "not from a finished build" in load_in_child(bad)["message"]


def test_binary_check_knows_system_libraries_and_refuses_cut_ones(tmp_path):
    """The header check on a library of the system (not built by us), whole and cut at many lengths."""
    candidates = [p for p in ("/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libc.so.6",
                              sys.executable) if os.path.exists(p)]
    if not candidates:
        pytest.skip("no system ELF file found")
    source = os.path.realpath(candidates[0])
    binary_check.check_library(source)
    data = open(source, "rb").read()
    target = tmp_path / "cut.so"
    for cut in [1, 4, 16, 63, 64, 200, len(data) // 3, len(data) - 4096, len(data) - 1]:
        target.write_bytes(data[:cut])
        with pytest.raises(binary_check.Damaged):
            binary_check.check_library(target)


@pytest.mark.parametrize("system,asks,needs", [("Windows", True, "Visual Studio Build Tools"),
                                               ("Linux", False, "C++17 compiler"), ("Darwin", False, "C++17 compiler")])
def test_the_fix_asks_for_a_build_where_install_py_would_not_build_by_default(monkeypatch, system, asks, needs):
    """install.py builds on Windows only with HEADROOM_BUILD_FROM_SOURCE=1 (source_build_wanted): a fix that
    just said "run install.py" would do nothing there."""
    install = install_module()
    monkeypatch.setattr(native_loader.platform, "system", lambda: system)
    monkeypatch.setattr(install.platform, "system", lambda: system)
    monkeypatch.delenv("HEADROOM_BUILD_FROM_SOURCE", raising=False)
    monkeypatch.setattr(install.shutil, "which", lambda tool: "/usr/bin/" + tool)
    command = native_loader.fix_command()
    assert ("HEADROOM_BUILD_FROM_SOURCE=1" in command) == asks
    assert install.source_build_wanted() == (not asks)  # the fix names the switch exactly where it is needed
    assert needs in native_loader.describe_fix() and "install.py" in command


def test_install_says_where_the_core_comes_from(tmp_path, monkeypatch):
    """install.py's line on the core: a recorded build is named; a library without its record is not
    counted (the nodes would refuse it), so the line says what gets the core instead."""
    install = install_module()
    monkeypatch.setattr(install.platform, "system", lambda: "Linux")
    monkeypatch.setattr(install, "BUILD", tmp_path / "build")
    monkeypatch.setitem(sys.modules, "headroom_core", None)  # no wheel in this Python
    (tmp_path / "build" / "capi").mkdir(parents=True)
    library = tmp_path / "build" / "capi" / "libheadroom_core.so"
    library.write_bytes(b"x")
    assert "not installed" in install.core_report() and "PyPI" in install.core_report()
    (tmp_path / "build" / "capi" / "libheadroom_core.so.record").write_text(record_of(b"x"))
    assert install.core_report() == f"Headroom: estimator core: this pack's build ({library})."
