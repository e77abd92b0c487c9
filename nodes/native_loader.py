"""Finds and loads Headroom's native parts, and explains how to fix it when they are missing: the
estimator core (the C library headroom_core, through ctypes: one binary for every Python) and the
LibTorch decoders (the pybind11 module _headroom_torch, which must match the running torch).

The pack must keep loading when the native build is absent, broken or built against another torch:
ComfyUI would otherwise list the whole pack as IMPORT FAILED and the user would see no hint. So every
failure here becomes a `NativeUnavailable` that names the cause and the exact command that fixes it.
"""
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import subprocess
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
CHILD_IMPORT_TIMEOUT_S = 300  # a torch import on a slow disk with a virus scanner can take a minute
CHILD_IMPORT_ERROR = 17  # the child's exit status for "raised an exception" (anything else is a crash)


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


def _recorded_intact(path: Path, size: int) -> bool:
    """True when install.py recorded this very file (same size and SHA-256) after a finished build."""
    if path.parent not in (python_dir(), capi_dir()):
        return False
    record = (build_info().get("modules") or {}).get(path.name)
    if not isinstance(record, dict) or record.get("size") != size:
        return False
    try:
        return record.get("sha256") == _sha256(path)
    except OSError:
        return False


def _crash_text(returncode: int) -> str:
    if returncode < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode:#x}" if returncode > 0xFFFF else f"exit status {returncode}"


def _child_load_code(name: str, path: Path) -> str:
    """What the test process runs: the decoder is imported as the module it is (after torch, whose
    libraries it needs), the core is opened as the C library it is and asked its interface version."""
    if name == TORCH_MODULE:
        load = ("    import importlib.util, torch\n"
                f"    spec = importlib.util.spec_from_file_location({name!r}, {str(path)!r})\n"
                "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")
    else:
        load = ("    import ctypes\n"
                f"    ctypes.CDLL({str(path)!r}).headroom_abi_version()\n")
    return ("import sys\n"
            "try:\n"
            + load +
            "except BaseException as e:\n"
            "    sys.stderr.write(f'{type(e).__name__}: {e}')\n"
            f"    sys.exit({CHILD_IMPORT_ERROR})\n")


def _import_in_child(name: str, path: Path):
    """Loads the library in a separate Python first, so a library that crashes whoever loads it takes
    down that child and not ComfyUI. None when it loads (or fails with a Python exception, which the
    load in this process then reports with the loader's own words); else the cause."""
    if not sys.executable:
        return None
    code = _child_load_code(name, path)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=CHILD_IMPORT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return (f"{name} did not finish loading within {CHILD_IMPORT_TIMEOUT_S} s in a test process ({path}); "
                f"it may be a corrupt build: run install.py again")
    except OSError:
        return None  # cannot start a child here; the structural check already passed
    if out.returncode in (0, CHILD_IMPORT_ERROR):
        return None
    return (f"{name} is a corrupt build: loading {path} crashed a test process ({_crash_text(out.returncode)}); "
            f"run install.py again")


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
        cause = None if _recorded_intact(path, stat.st_size) else _import_in_child(name, path)
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
