"""Finds and loads Headroom's native parts, and explains how to fix it when they are missing: the
estimator core (the C library headroom_core, through ctypes: one binary for every Python) and the
LibTorch decoders (the pybind11 module _headroom_torch, which must match the running torch).

The pack must keep loading when the native build is absent, broken or built against another torch:
ComfyUI would otherwise list the whole pack as IMPORT FAILED and the user would see no hint. So every
failure here becomes a `NativeUnavailable` that names the cause and the exact command that fixes it.

A library is loaded only when it is the very file a finished build or an installed wheel recorded: the
build writes `<library>.record` (size and SHA-256, native/cmake/record_library.cmake), pip keeps each
wheel file's hash in its RECORD. A file cut short (which would kill ComfyUI with SIGBUS once mapped) or
changed afterwards is refused without being loaded, and without starting any process: whether a build
crashes when loaded is install.py's to prove, at install time.

The file is read once, and the bytes of that read are what is checked and what is loaded: a second open
of the path would see whatever a rebuild running meanwhile had put there. On Linux they are loaded from a
sealed anonymous memory file, elsewhere from a copy in a folder only this user can write to.
"""
import atexit
import base64
import csv
import hashlib
import importlib
import importlib.machinery
import importlib.util
import io
import json
import os
import platform
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import binary_check, core_json

PACK_DIR = Path(__file__).resolve().parents[2]  # nodes/native/ -> the pack
CORE_MODULE = "headroom_core"
TORCH_MODULE = "_headroom_torch"
BUILD_INFO_FILE = "headroom_build.json"  # written by install.py next to the decoder module


class NativeUnavailable(RuntimeError):
    """The native module cannot be used; str() holds the cause and the fix."""


_lock = threading.Lock()
_cache = {}  # module name -> (module or None, cause or None)
# SHA-256 of checked bytes -> the path this process loads them from. Survives reset(): loading the same
# bytes again finds the library already loaded instead of mapping a second copy of it. Keyed by what was
# hashed, not by the file's name, size and time, which a replacement can share.
_images = {}
_private = []  # this process's folder of private copies, once made
PRIVATE_PREFIX = "headroom-native-"  # + pid + "-": tempfile.mkdtemp's folders for private copies
STALE_AFTER_S = 600  # where a folder's owner cannot be asked whether it runs (Windows): its age instead
RECORD_SUFFIX = ".record"  # beside each built library: {"size": bytes, "sha256": hex}
WHEELS = ("headroom_core", "headroom_torch")  # the distributions whose RECORD may list a library


def build_dir() -> Path:
    """$HEADROOM_BUILD_DIR (relative paths are taken from the pack folder), else <pack>/build."""
    env = os.environ.get("HEADROOM_BUILD_DIR")
    if env:
        path = Path(env)
        return path if path.is_absolute() else PACK_DIR / path
    return PACK_DIR / "build"


def python_dir() -> Path:
    return build_dir() / "python"


def capi_dir() -> Path:
    return build_dir() / "capi"


def build_info() -> dict:
    """What install.py recorded about the build (torch/Python versions), or {}."""
    try:
        return json.loads((python_dir() / BUILD_INFO_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _torch_versions():
    """(torch version, CUDA version) of the running torch without importing it if it is not loaded yet."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F811  (only to report versions; ComfyUI has it loaded anyway)
        except Exception:
            return None, None
    return getattr(torch, "__version__", None), getattr(getattr(torch, "version", None), "cuda", None)


def environment() -> dict:
    torch_version, cuda_version = _torch_versions()
    return {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch_version": torch_version,
        "cuda_version": cuda_version,
        "build_dir": str(build_dir()),
    }


def fix_command() -> str:
    """The command that rebuilds the native parts for the Python and torch that run ComfyUI. On Windows
    install.py builds only when asked (the portable build has no compiler), so the command asks."""
    command = f'"{sys.executable}" "{PACK_DIR / "install.py"}"'
    if platform.system() == "Windows":
        return f"set HEADROOM_BUILD_FROM_SOURCE=1 && {command}"
    return command


def describe_fix() -> str:
    env = environment()
    needs = ("Visual Studio Build Tools (C++), CMake and nlohmann_json" if platform.system() == "Windows"
             else "cmake, ninja and a C++17 compiler")
    return (
        f"Fix: run {fix_command()}  (it builds with this Python {env['python_version']}, "
        f"torch {env['torch_version'] or 'not installed'}, CUDA {env['cuda_version'] or 'none'}; "
        f"needs {needs}), then restart ComfyUI."
    )


def _built_module_file(name: str):
    """The module `name` in the build folder (an extension for this Python's ABI first), or None."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES + importlib.machinery.SOURCE_SUFFIXES:
        path = python_dir() / (name + suffix)
        if path.is_file():
            return path
    return None


def _is_binary(path: Path) -> bool:
    return any(path.name.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def _installed_module_file(name: str):
    """The extension-module file `import name` would load from sys.path (a decoder wheel), or None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader) or not spec.origin:
        return None
    return Path(spec.origin)


def _read(path: Path) -> bytes:
    """The whole file, through one descriptor. O_NONBLOCK and the type check: a FIFO or a device under the
    library's name would block the open or never end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"expected a regular file, found file type {stat.S_IFMT(mode):#o}")
        return f.read()


def _build_record(path: Path):
    """What the build recorded beside the library ({"size", "sha256"}), or None."""
    try:
        record = json.loads(Path(str(path) + RECORD_SUFFIX).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


_SHA256_B64 = re.compile(r"[A-Za-z0-9_-]{43}=?")  # 32 bytes in URL-safe base64, as pip writes them
_DECIMAL = re.compile(r"[0-9]{1,20}")  # not str.isdigit, which takes digits int() refuses ("²")


def _record_rows(text: str):
    """[(path, sha256 hex or None, size or None)] of a wheel's RECORD; ValueError naming the first line that
    is not what pip writes (path, algorithm=URL-safe base64 digest or nothing, size in bytes or nothing)."""
    rows = []
    reader = csv.reader(io.StringIO(text))
    try:
        for fields in reader:
            if not fields:
                continue
            if len(fields) != 3:
                raise ValueError(f"line {reader.line_num} has {len(fields)} fields where a RECORD line has 3 "
                                 f"(path, hash, size)")
            name, hash_field, size_field = fields
            algorithm, _, value = hash_field.partition("=")
            if hash_field and not (algorithm and value):
                raise ValueError(f"line {reader.line_num}: hash {hash_field[:80]!r} is not algorithm=digest")
            if algorithm == "sha256" and not _SHA256_B64.fullmatch(value):
                raise ValueError(f"line {reader.line_num}: sha256 digest {value[:80]!r} is not 32 bytes in "
                                 f"URL-safe base64")
            if size_field and not _DECIMAL.fullmatch(size_field):
                raise ValueError(f"line {reader.line_num}: size {size_field[:80]!r} is not a number of bytes")
            sha256 = (base64.urlsafe_b64decode(value.rstrip("=") + "=").hex() if algorithm == "sha256"
                      else None)
            rows.append((name, sha256, int(size_field) if size_field else None))
    except csv.Error as e:
        raise ValueError(f"line {reader.line_num} is not CSV ({e})")
    return rows


def _record_entry(dist, path: Path, target: Path):
    """{"size", "sha256"} of `target` in this distribution's RECORD, or None when it does not list it.
    ValueError (and whatever a broken installation raises) when the RECORD cannot be read as pip writes it."""
    try:
        text = dist.read_text("RECORD")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text ({e})")
    for name, sha256, size in _record_rows(text or ""):
        if sha256 is None or size is None or Path(name).name != path.name:
            continue
        if Path(dist.locate_file(name)).resolve() == target:
            return {"size": size, "sha256": sha256}
    return None


def _wheel_record(path: Path):
    """(what pip recorded for this file when it installed one of our wheels, {"size", "sha256"}, or None;
    [why each of our wheels whose RECORD could not be read counts as listing nothing]). A RECORD is text
    anyone can break, and this runs while ComfyUI starts and answers requests: nothing here may raise."""
    from importlib import metadata
    try:
        target = path.resolve()
    except (OSError, RuntimeError):
        return None, []
    unreadable = []
    for wheel in WHEELS:
        try:
            dists = list(metadata.distributions(name=wheel))
        except Exception as e:  # a sys.path entry importlib cannot list
            unreadable.append(f"the installed {wheel} cannot be listed ({type(e).__name__}: {e})")
            continue
        for dist in dists:
            folder = getattr(dist, "_path", None)  # the .dist-info folder, which has no public name
            where = (f"{Path(folder).name}'s RECORD ({Path(folder) / 'RECORD'})" if folder is not None
                     else f"the RECORD of the installed {wheel}")
            try:
                record = _record_entry(dist, path, target)
            except ValueError as e:
                unreadable.append(f"{where} is corrupt: {e}")
                continue
            except Exception as e:  # an installation broken some other way (a loop of links, say)
                unreadable.append(f"{where} cannot be read: {type(e).__name__}: {e}")
                continue
            if record is not None:
                return record, unreadable
    return None, unreadable


def _vet(name: str, path: Path):
    """((bytes, sha256 hex), None) when these bytes of the library may be loaded into this process, else
    (None, why not). Everything is judged on one read of the file, so that _loadable loads what was judged."""
    try:
        data = _read(path)
    except OSError as e:
        return None, f"{name} cannot be read ({path}: {e})"
    try:
        binary_check.check_image(data)
    except binary_check.Damaged as e:
        return None, f"{name} is a corrupt build ({path}: {e}): run install.py again"
    record, unreadable = _build_record(path), []
    if record is None:
        record, unreadable = _wheel_record(path)
    if record is None:
        if unreadable:
            return None, (f"{name} at {path} is not from a finished build (no {path.name}{RECORD_SUFFIX} beside "
                          f"it, and no installed Headroom wheel lists it: {'; '.join(unreadable)}): reinstall "
                          f"that wheel or run install.py again")
        return None, (f"{name} at {path} is not from a finished build (no {path.name}{RECORD_SUFFIX} beside it, "
                      f"and no installed Headroom wheel lists it): run install.py again")
    if record.get("size") != len(data):
        return None, (f"{name} is a corrupt build ({path}: {len(data)} bytes where its build wrote "
                      f"{record.get('size')}): run install.py again")
    digest = hashlib.sha256(data).hexdigest()
    if record.get("sha256") != digest:
        return None, f"{name} is a corrupt build ({path}: changed since its build wrote it): run install.py again"
    return (data, digest), None


def _sealed_memory_file(name: str, data: bytes):
    """/proc/self/fd/N of an anonymous memory file holding `data`, sealed against any change; None where
    Linux offers none (another OS, a kernel before 3.17, a sandbox that forbids memfd_create, no /proc)."""
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = create(name, getattr(os, "MFD_CLOEXEC", 0) | getattr(os, "MFD_ALLOW_SEALING", 0))
    except OSError:
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:  # no memory for it: a private copy on disk may still fit
        os.close(fd)
        return None
    try:
        import fcntl
        seals = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except (ImportError, AttributeError, OSError):
        pass  # no seals on this kernel or Python: the file has no name, so only this process reaches it
    # The descriptor stays open for the life of the process: dlopen hands back the library it already
    # loaded from a path, so a closed descriptor's number, reused by the next memory file, would name the
    # wrong library.
    return f"/proc/self/fd/{fd}"


def _owner_gone(pid: int, folder: os.stat_result) -> bool:
    if os.name == "nt":
        # os.kill would end the process there, and nothing else asks without a process or a Win32 call.
        # Windows refuses to delete a loaded DLL, so only the moment between writing a copy and loading it
        # needs sparing: the folder's age covers that.
        return time.time() - folder.st_mtime > STALE_AFTER_S
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _remove_stale_copies(base: str):
    """Removes the folders of private copies that earlier processes of this user left in `base` (killed
    before their exit handler ran, or on Windows, where a loaded DLL cannot be deleted at exit). Only
    real folders named by PRIVATE_PREFIX and a pid, owned by this user, whose process has ended."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        match = re.fullmatch(re.escape(PRIVATE_PREFIX) + r"(\d+)-[^/\\]+", entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            continue
        if _owner_gone(int(match.group(1)), info):
            shutil.rmtree(entry.path, ignore_errors=True)  # what a running process holds stays: no harm


def _private_copy(data: bytes, digest: str, filename: str) -> str:
    """A copy of `data` named `filename` in this process's own folder (mode 0700), removed at exit."""
    if not _private:
        base = tempfile.gettempdir()
        _remove_stale_copies(base)
        _private.append(tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-", dir=base))
        atexit.register(shutil.rmtree, _private[0], True)
    folder = Path(_private[0]) / digest[:32]  # one per distinct bytes: two builds of one name may both load
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / filename
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return str(target)


def _loadable(name: str, image, filename: str) -> str:
    """A path that holds exactly the checked bytes of `image` and that nobody else changes: a sealed memory
    file on Linux, else a private copy. One per distinct bytes in this process."""
    data, digest = image
    where = _images.get(digest)
    if where is None or not os.path.exists(where):
        where = _sealed_memory_file(name, data) or _private_copy(data, digest, filename)
        _images[digest] = where
    return where


def _in_words(error: BaseException, where, path: Path) -> str:
    """The loader's message about `where`, naming the file the user knows instead."""
    text = str(error)
    return text.replace(where, str(path)) if where else text


def _import(name: str):
    """The decoder module from the build folder (loaded by its path: no sys.path edit), else from an
    installed decoder wheel; a binary one from the very bytes _vet checked."""
    if name in sys.modules:  # loaded already (or hidden with None)
        module = sys.modules[name]
        return (module, None) if module is not None else (None, f"{name} is not built (hidden in this process)")
    built = _built_module_file(name)
    path = built or _installed_module_file(name)
    if path is None:
        return None, f"{name} is not built (looked in {python_dir()} and on sys.path)"
    where = None
    try:
        if not _is_binary(path):  # Python source (a stand-in): nothing is mapped, so there is nothing to vet
            return _exec_module(importlib.util.spec_from_file_location(name, path)), None
        image, cause = _vet(name, path)
        if cause:
            return None, cause
        where = _loadable(name, image, path.name)
        # The loader is given, not guessed from the path's suffix: /proc/self/fd/N has none.
        spec = importlib.util.spec_from_file_location(name, where,
                                                      loader=importlib.machinery.ExtensionFileLoader(name, where))
        module = _exec_module(spec)
        module.__file__ = str(path)  # where the start-up log says it came from: the file the user knows
        return module, None
    except ImportError as e:
        return None, f"{name} failed to import: {_in_words(e, where, path)}"
    except Exception as e:  # a broken binary can raise anything at import
        return None, f"{name} failed to import: {type(e).__name__}: {_in_words(e, where, path)}"


def _exec_module(spec):
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def _load_core():
    """The C library: this pack's own build first (made from this very source by install.py), then the
    headroom_core wheel. Each file is checked before it is mapped into this process, and what is mapped is
    the bytes that were checked."""
    from . import core_capi
    found = [path for path in core_capi.candidates(build_dir()) if path.is_file()]
    if not found:
        return None, (f"{CORE_MODULE} is not installed (no {core_capi.library_name()} in {capi_dir()}, and no "
                      f"headroom_core package in this Python)")
    causes = []
    for path in found:
        image, cause = _vet(CORE_MODULE, path)
        if cause is None:
            where = None
            try:
                where = _loadable(CORE_MODULE, image, path.name)
                return core_capi.CapiCore(path, load_from=where), None
            except (binary_check.Damaged, OSError, ImportError, AttributeError) as e:
                # A whole library that is not ours (or of another interface): its loader's own words.
                cause = f"{CORE_MODULE} at {path} failed to load: {type(e).__name__}: {_in_words(e, where, path)}"
        causes.append(cause)
    return None, "; ".join(causes)


def _torch_mismatch(module):
    built = None
    try:
        built = module.built_torch_version()
    except Exception as e:
        return f"{TORCH_MODULE}.built_torch_version() failed: {e}"
    running, _ = _torch_versions()
    if built and running and built != running:
        return f"{TORCH_MODULE} was built against torch {built}, but ComfyUI runs torch {running}"
    return None


def _load(name: str):
    with _lock:
        if name not in _cache:
            if name == TORCH_MODULE:
                running, _ = _torch_versions()
                if running is None:
                    _cache[name] = (None, "torch is not importable in this Python")
                    return _cache[name]
            module, cause = _load_core() if name == CORE_MODULE else _import(name)
            built = build_info().get("torch_version")
            running, _ = _torch_versions() if name == TORCH_MODULE else (None, None)
            if module is None and built and running and built != running:
                cause += f" (it was built against torch {built}; ComfyUI runs torch {running})"
            if module is not None and name == TORCH_MODULE:
                cause = _torch_mismatch(module)
                if cause:
                    module = None
            _cache[name] = (module, cause)
        return _cache[name]


def reset():
    """Forget what was loaded (tests; after a rebuild the user restarts ComfyUI anyway)."""
    with _lock:
        _cache.clear()
        _catalogs.clear()


def core():
    """The estimator module, or NativeUnavailable with cause and fix."""
    module, cause = _load(CORE_MODULE)
    if module is None:
        raise NativeUnavailable(f"Headroom's native core is unavailable: {cause}. {describe_fix()}")
    return module


_catalogs = {}  # id(core) -> (core, parsed catalog); the core is kept so its id is never reused by another


def catalog() -> dict:
    """The core's catalog (api::catalog(): models, gpus, presets, verdicts, runtime), parsed once per loaded
    core and shared by every caller, which must not change it. NativeUnavailable when the core is not
    loaded; ValueError or RuntimeError when it answers no catalog."""
    module = core()
    key = id(module)
    with _lock:
        cached = _catalogs.get(key)
        if cached is not None and cached[0] is module:
            return cached[1]
    parsed = json.loads(module.catalog())
    if not isinstance(parsed, dict):
        raise ValueError(f"catalog: expected a JSON object from the core, got {type(parsed).__name__}")
    with _lock:
        _catalogs[key] = (module, parsed)
    return parsed


def torch_ops():
    """The LibTorch decoders, or NativeUnavailable with cause and fix."""
    module, cause = _load(TORCH_MODULE)
    if module is None:
        raise NativeUnavailable(f"Headroom's native decoder is unavailable: {cause}. {describe_fix()}")
    return module


def call_json(function: str, request) -> dict:
    """core().<function>(json) -> dict. Native InputError stays a ValueError with the core's message."""
    payload = request if isinstance(request, str) else core_json.dumps(request)
    return json.loads(getattr(core(), function)(payload))


def startup_lines():
    """[(logging level, text)] for ComfyUI's start-up log: whether each native part loaded, from where,
    or why not and the fix. Loads the modules (ComfyUI has torch imported by then)."""
    import logging
    lines = []
    for label, name in (("native core (estimator, planner, OOM explainer)", CORE_MODULE),
                        ("native decoders (VAE Decode (Headroom))", TORCH_MODULE)):
        module, cause = _load(name)
        if module is not None:
            where = getattr(module, "__file__", None) or "?"
            version = getattr(module, "version", None)
            built = build_info().get("built_at") if Path(where).parent in (python_dir(), capi_dir()) else None
            details = [f"version {version}"] if isinstance(version, str) else []
            details += [f"built {built}"] if built else []
            lines.append((logging.INFO, f"Headroom: {label} loaded from {where}"
                                        + (f" ({', '.join(details)})" if details else "")))
        else:
            lines.append((logging.WARNING, f"Headroom: {label} not loaded: {cause}. The nodes still load and "
                                           f"say so when used. {describe_fix()}"))
    return lines


def status() -> dict:
    """For /headroom/vram and the panel: which native parts work, why not, and the fix."""
    out = {"environment": environment(), "build_info": build_info(), "fix": fix_command()}
    for key, name in (("core", CORE_MODULE), ("torch", TORCH_MODULE)):
        module, cause = _load(name)
        out[key] = {"available": module is not None, "cause": cause}
    return out
