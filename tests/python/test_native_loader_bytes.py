"""What the loader maps is what it checked (issue 27, item 2), and a broken wheel RECORD is a cause, not an
exception (issue 27, item 7).

Item 2: a library was hashed through one open of its path and loaded through another, so a rebuild that
replaced the file in between had ComfyUI load bytes nobody hashed. Each test here replaces the file right
after the loader checked it (by wrapping native_loader._vet, which reads and judges the file) and shows
that the checked bytes are the ones that run: the core keeps the version string of the bytes that were
checked, and a garbage replacement changes nothing.

Item 7: importlib.metadata.files() raises TypeError or ValueError on a RECORD that is not what pip writes;
that escaped the loader, so /headroom/vram, /presets, /explain answered 500. A fake installed headroom_core
(a package with the real library and a .dist-info beside it) on sys.path shows each kind of damage turning
into a cause that names the wheel and its RECORD."""
import base64
import hashlib
import json
import os
import random
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import BUILD_DIR, BUILD_PYTHON, load_pack, native_core_or_none

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402

CORE_SO = BUILD_DIR / "capi" / "libheadroom_core.so"
CORE_SO = CORE_SO if CORE_SO.is_file() else None
TORCH_SOS = sorted(BUILD_PYTHON.glob("_headroom_torch.*.so")) if BUILD_PYTHON.is_dir() else []
needs_core = pytest.mark.skipif(CORE_SO is None, reason="the core library (build/capi) is not built")
needs_torch = pytest.mark.skipif(not TORCH_SOS, reason="_headroom_torch is not built")


def record_of(data):
    return json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()})


def garbage(n=65536):
    rng = random.Random(27)
    return bytes(rng.getrandbits(8) for _ in range(n))


def rebuilt(data, version):
    """The library as another build would leave it: whole, loadable, and telling itself apart by the
    version string headroom_version() returns (every copy of it replaced, same length)."""
    other = re.sub(r"\d", lambda m: "8" if m.group() == "9" else "9", version)
    assert other != version and len(other) == len(version)
    needle = version.encode() + b"\0"
    assert needle in data, "the version string is not in the library"
    return data.replace(needle, other.encode() + b"\0"), other


@pytest.fixture
def loader(monkeypatch, tmp_path):
    """The pack's loader, looking at a build folder of this test only and at no installed core wheel."""
    monkeypatch.setenv("HEADROOM_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setitem(sys.modules, "headroom_core", None)
    monkeypatch.setitem(sys.modules, "torch", None)  # status() then reports the decoders without loading torch
    native_loader.reset()
    yield native_loader
    native_loader.reset()


def build_with_core(tmp_path, data=None):
    folder = tmp_path / "build" / "capi"
    folder.mkdir(parents=True)
    data = CORE_SO.read_bytes() if data is None else data
    (folder / CORE_SO.name).write_bytes(data)
    (folder / (CORE_SO.name + ".record")).write_text(record_of(data))
    return folder / CORE_SO.name


def replace_after_check(monkeypatch, library, data, record=None):
    """Right after the loader has read and judged `library`, the file is replaced (as a rebuild replaces
    it: a new file renamed over the old one) by `data`, with `record` as its record when given."""
    checked = native_loader._vet
    swaps = []

    def vet_then_replace(name, path):
        result = checked(name, path)
        if Path(path) == library:
            fresh = library.with_name(library.name + ".new")
            fresh.write_bytes(data)
            os.replace(fresh, library)
            if record is not None:
                Path(str(library) + ".record").write_text(record)
            swaps.append(path)
        return result
    monkeypatch.setattr(native_loader, "_vet", vet_then_replace)
    return swaps


@needs_core
@pytest.mark.parametrize("replacement", ["another recorded build", "garbage"])
def test_a_core_replaced_after_its_check_loads_the_checked_bytes(loader, tmp_path, monkeypatch, replacement):
    version = native_core_or_none().version
    original = CORE_SO.read_bytes()
    library = build_with_core(tmp_path, original)
    if replacement == "garbage":
        swaps = replace_after_check(monkeypatch, library, garbage())
    else:
        data, _ = rebuilt(original, version)
        swaps = replace_after_check(monkeypatch, library, data, record=record_of(data))
    core = loader.core()
    assert swaps == [library] and library.read_bytes() != original  # the file was replaced, after the check
    assert core.version == version  # the checked build runs, not the file that came after it
    assert json.loads(core.catalog())["models"]
    assert core.__file__ == str(library)  # the user still sees the file they know
    assert loader.status()["core"] == {"available": True, "cause": None}


@needs_core
def test_a_replacement_with_the_same_size_and_time_is_hashed_again(loader, tmp_path):
    """A verdict was cached by (path, size, mtime): a replacement that kept those three (cp -p, a build
    that restores times) was loaded without being hashed. Now every load judges the bytes it reads."""
    version = native_core_or_none().version
    original = CORE_SO.read_bytes()
    library = build_with_core(tmp_path, original)
    assert loader.core().version == version
    before = library.stat()
    data, _ = rebuilt(original, version)
    fresh = library.with_name("fresh")
    fresh.write_bytes(data)
    os.replace(fresh, library)
    os.utime(library, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = library.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    loader.reset()
    with pytest.raises(loader.NativeUnavailable, match="changed since its build wrote it"):
        loader.core()


@needs_core
def test_the_checked_bytes_are_mapped_from_a_sealed_memory_file(loader, tmp_path):
    """On Linux the library is mapped from an anonymous memory file sealed against writes, not from the
    path (which a rebuild may be rewriting): /proc/self/maps says what backs headroom_call's code."""
    import ctypes
    if not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create in this Python")
    library = build_with_core(tmp_path)
    core = loader.core()
    address = ctypes.cast(core._lib.headroom_call, ctypes.c_void_p).value
    backing = None
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *rest = line.split(None, 5)
        low, high = (int(x, 16) for x in span.split("-"))
        if low <= address < high:
            backing = rest[-1] if len(rest) == 5 else ""
    assert backing is not None and backing.startswith("/memfd:") and str(library) not in backing, backing
    (where,) = [w for w in native_loader._images.values() if Path(w).read_bytes() == library.read_bytes()]
    assert os.readlink(where).startswith("/memfd:"), os.readlink(where)
    with pytest.raises(OSError):  # sealed: not even this process can change what it loaded
        with open(where, "r+b") as f:
            f.write(b"x")


@needs_core
def test_without_memfd_a_private_copy_is_loaded_and_only_stale_copies_go(loader, tmp_path, monkeypatch):
    """Where there is no memfd (macOS, Windows, an old Linux) the checked bytes are copied into a fresh
    folder of this process (mode 0700) and loaded from there; folders earlier processes of this user left
    behind are removed, nothing else."""
    version = native_core_or_none().version
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.delattr(os, "memfd_create")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(native_loader, "_images", {})
    monkeypatch.setattr(native_loader, "_private", [])
    ended = subprocess.Popen(["true"])
    ended.wait()
    stale = temp / f"headroom-native-{ended.pid}-abc"
    (stale / "0123").mkdir(parents=True)
    (stale / "0123" / "libheadroom_core.so").write_bytes(b"left by a process that was killed")
    running = temp / f"headroom-native-{os.getppid()}-def"  # pytest's parent runs
    running.mkdir()
    unrelated = [temp / "headroom-native-notes", temp / "something-else"]
    for folder in unrelated:
        folder.mkdir()
        (folder / "keep").write_text("not ours to remove")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("reached only through a link")
    (temp / f"headroom-native-{ended.pid}-link").symlink_to(elsewhere, target_is_directory=True)

    original = CORE_SO.read_bytes()
    library = build_with_core(tmp_path, original)
    replace_after_check(monkeypatch, library, garbage())
    core = loader.core()
    assert core.version == version and core.__file__ == str(library)

    (own,) = temp.glob(f"headroom-native-{os.getpid()}-*")
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    (copy,) = own.glob("*/" + CORE_SO.name)
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == hashlib.sha256(original).hexdigest()
    assert not stale.exists()
    assert running.is_dir() and all((folder / "keep").is_file() for folder in unrelated)
    assert (elsewhere / "keep").is_file()


@needs_torch
def test_a_decoder_replaced_after_its_check_loads_the_checked_bytes(tmp_path):
    """The decoder module is loaded (in a fresh Python: a second copy of a pybind11 module cannot share
    one) from the bytes checked, also when garbage replaced the file right after the check."""
    from test_pack_import import run
    source = TORCH_SOS[0]
    folder = tmp_path / "build" / "python"
    folder.mkdir(parents=True)
    library = folder / source.name
    library.write_bytes(source.read_bytes())
    (folder / (source.name + ".record")).write_text(record_of(source.read_bytes()))
    got = run(f"""
        import os
        from pathlib import Path
        from headroom_pack.nodes.native import native_loader
        checked = native_loader._vet
        def vet_then_replace(name, path):
            result = checked(name, path)
            Path({str(library) + '.new'!r}).write_bytes(os.urandom(65536))
            os.replace({str(library) + '.new'!r}, {str(library)!r})
            return result
        native_loader._vet = vet_then_replace
        try:
            module = native_loader.torch_ops()
            got = {{"works": callable(module.decode), "file": module.__file__}}
        except native_loader.NativeUnavailable as e:
            got = {{"cause": str(e)}}
        got["now"] = Path({str(library)!r}).stat().st_size
        got["startup"] = [text for _, text in native_loader.startup_lines() if "decoders" in text]
        print(json.dumps(got))
    """, tmp_path / "build", timeout=300)
    assert got["now"] == 65536, got  # the file was replaced
    assert got.get("works") is True and got["file"] == str(library), got
    assert f"loaded from {library}" in got["startup"][0], got


# ---- item 7: the wheel's RECORD ----

def b64(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def installed_core_wheel(site, record_text, metadata=b"Metadata-Version: 2.1\nName: headroom_core\nVersion: 0.1.0\n"):
    """A headroom_core installed the way pip leaves it in `site`: the package with the real library, and
    headroom_core-0.1.0.dist-info with METADATA and RECORD (bytes, or text with {digest} and {size})."""
    package = site / "headroom_core"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    data = CORE_SO.read_bytes()
    (package / CORE_SO.name).write_bytes(data)
    info = site / "headroom_core-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(metadata)
    if isinstance(record_text, str):
        record_text = record_text.format(digest=b64(data), size=len(data)).encode()
    (info / "RECORD").write_bytes(record_text)
    return package / CORE_SO.name, info / "RECORD"


GOOD_LINES = ("headroom_core/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n"
              "headroom_core/libheadroom_core.so,sha256={digest},{size}\n"
              "headroom_core-0.1.0.dist-info/RECORD,,\n")

CORRUPT = {
    "too many fields": "headroom_core/libheadroom_core.so,sha256={digest},{size},extra\n",
    "too few fields": "headroom_core/libheadroom_core.so,\"sha256={digest},{size}\n",
    "size not a number": "headroom_core/libheadroom_core.so,sha256={digest},12kB\n",
    "digest not base64": "headroom_core/libheadroom_core.so,sha256=!!not*base64!!,{size}\n",
    "digest cut short": "headroom_core/libheadroom_core.so,sha256=AAAA,{size}\n",
    "hash without algorithm": "headroom_core/libheadroom_core.so,deadbeef,{size}\n",
    "bad CSV": "x" * 200000 + ",,\n" + GOOD_LINES,
    "not UTF-8": b"headroom_core/libheadroom_core.so,sha256=\xff\xfe,1\n",
    "bad line among good ones": GOOD_LINES + "headroom_core/other.py,sha256,3\n",
}


@needs_core
@pytest.mark.parametrize("damage", sorted(CORRUPT))
def test_a_corrupt_wheel_record_is_a_cause_naming_the_wheel(loader, tmp_path, monkeypatch, damage):
    monkeypatch.delitem(sys.modules, "headroom_core")  # this test's installed wheel is found
    site = tmp_path / "site"
    library, record = installed_core_wheel(site, CORRUPT[damage])
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(loader.NativeUnavailable) as raised:
        loader.core()
    cause = str(raised.value)
    assert "headroom_core-0.1.0.dist-info" in cause and str(record) in cause and "corrupt" in cause, cause
    assert str(library) in cause and "not from a finished build" in cause
    status = loader.status()
    assert status["core"]["available"] is False and str(record) in status["core"]["cause"]
    assert status["torch"]["available"] is False


@needs_core
def test_a_whole_wheel_loads_whatever_its_metadata_and_the_other_wheels_record(loader, tmp_path, monkeypatch):
    """The counterpart of the test above, so that its RECORD lines are known to be what pip writes: the same
    wheel with a whole RECORD loads, even with a METADATA that is not UTF-8 (the loader never reads it)
    and a decoder wheel whose RECORD is broken beside it."""
    monkeypatch.delitem(sys.modules, "headroom_core")
    site = tmp_path / "site"
    library, _ = installed_core_wheel(site, GOOD_LINES, metadata=b"Name: headroom_core\nSummary: \xff\xfe\n")
    broken = site / "headroom_torch-0.1.0.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_bytes(b"Name: headroom_torch\nVersion: 0.1.0\n")
    (broken / "RECORD").write_bytes(b"\xff,a,b,c\n")
    monkeypatch.syspath_prepend(str(site))
    core = loader.core()
    assert core.__file__ == str(library) and json.loads(core.catalog())["models"]
    assert loader.status()["core"] == {"available": True, "cause": None}
