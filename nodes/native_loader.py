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
"""
import base64
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import sys
import threading
from pathlib import Path

from . import binary_check

PACK_DIR = Path(__file__).resolve().parent.parent
CORE_MODULE = "headroom_core"
TORCH_MODULE = "_headroom_torch"
BUILD_INFO_FILE = "headroom_build.json"  # written by install.py next to the decoder module


class NativeUnavailable(RuntimeError):
    """The native module cannot be used; str() holds the cause and the fix."""


_lock = threading.Lock()
_cache = {}  # module name -> (module or None, cause or None)
_vetted = {}  # (path, size, mtime) -> cause or None; survives reset(): a file is judged once per process
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


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _build_record(path: Path):
    """What the build recorded beside the library ({"size", "sha256"}), or None."""
    try:
        record = json.loads(Path(str(path) + RECORD_SUFFIX).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _wheel_record(path: Path):
    """What pip recorded for this file when it installed one of our wheels ({"size", "sha256"}), or None."""
    from importlib import metadata
    try:
        target = path.resolve()
    except OSError:
        return None
    for dist in WHEELS:
        try:
            files = metadata.files(dist) or []
        except metadata.PackageNotFoundError:
            continue
        for f in files:
            if f.hash is None or f.hash.mode != "sha256" or Path(str(f)).name != path.name:
                continue
            try:
                if Path(f.locate()).resolve() != target:
                    continue
            except OSError:
                continue
            value = f.hash.value
            return {"size": f.size, "sha256": base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()}
    return None


def _vet(name: str, path: Path):
    """None when the library file may be loaded into this process; else why not (the cause)."""
    try:
        stat = path.stat()
    except OSError as e:
        return f"{name} cannot be read ({path}: {e})"
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _vetted:
        return _vetted[key]
    try:
        binary_check.check_library(path)
        record = _build_record(path) or _wheel_record(path)
        if record is None:
            cause = (f"{name} at {path} is not from a finished build (no {path.name}{RECORD_SUFFIX} beside it, "
                     f"and no installed Headroom wheel lists it): run install.py again")
        elif record.get("size") != stat.st_size:
            cause = (f"{name} is a corrupt build ({path}: {stat.st_size} bytes where its build wrote "
                     f"{record.get('size')}): run install.py again")
        elif record.get("sha256") != _sha256(path):
            cause = f"{name} is a corrupt build ({path}: changed since its build wrote it): run install.py again"
        else:
            cause = None
    except binary_check.Damaged as e:
        cause = f"{name} is a corrupt build ({path}: {e}): run install.py again"
    except OSError as e:
        cause = f"{name} cannot be read ({path}: {e})"
    _vetted[key] = cause
    return cause


def _import(name: str):
    """The decoder module from the build folder (loaded by its path: no sys.path edit), else from an
    installed decoder wheel."""
    if name in sys.modules:  # loaded already (or hidden with None)
        module = sys.modules[name]
        return (module, None) if module is not None else (None, f"{name} is not built (hidden in this process)")
    built = _built_module_file(name)
    path = built or _installed_module_file(name)
    if path is None:
        return None, f"{name} is not built (looked in {python_dir()} and on sys.path)"
    cause = _vet(name, path) if _is_binary(path) else None
    if cause:
        return None, cause
    try:
        if built is None:
            return importlib.import_module(name), None
        spec = importlib.util.spec_from_file_location(name, built)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module, None
    except ImportError as e:
        return None, f"{name} failed to import: {e}"
    except Exception as e:  # a broken binary can raise anything at import
        return None, f"{name} failed to import: {type(e).__name__}: {e}"


def _load_core():
    """The C library: this pack's own build first (made from this very source by install.py), then the
    headroom_core wheel. Each file is checked before it is mapped into this process."""
    from . import core_capi
    found = [path for path in core_capi.candidates(build_dir()) if path.is_file()]
    if not found:
        return None, (f"{CORE_MODULE} is not installed (no {core_capi.library_name()} in {capi_dir()}, and no "
                      f"headroom_core package in this Python)")
    causes = []
    for path in found:
        cause = _vet(CORE_MODULE, path)
        if cause is None:
            try:
                return core_capi.CapiCore(path), None
            except (binary_check.Damaged, OSError, ImportError, AttributeError) as e:
                # A whole library that is not ours (or of another interface): its loader's own words.
                cause = f"{CORE_MODULE} at {path} failed to load: {type(e).__name__}: {e}"
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


def core():
    """The estimator module, or NativeUnavailable with cause and fix."""
    module, cause = _load(CORE_MODULE)
    if module is None:
        raise NativeUnavailable(f"Headroom's native core is unavailable: {cause}. {describe_fix()}")
    return module


def torch_ops():
    """The LibTorch decoders, or NativeUnavailable with cause and fix."""
    module, cause = _load(TORCH_MODULE)
    if module is None:
        raise NativeUnavailable(f"Headroom's native decoder is unavailable: {cause}. {describe_fix()}")
    return module


def call_json(function: str, request) -> dict:
    """core().<function>(json) -> dict. Native InputError stays a ValueError with the core's message."""
    payload = request if isinstance(request, str) else json.dumps(request)
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
