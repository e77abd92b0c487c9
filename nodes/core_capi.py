"""The estimator through the C library headroom_core (native/capi) instead of the pybind11 module: the
same functions, JSON text in and out, so the nodes need not know which one answers. One binary serves
every Python (ComfyUI's embedded 3.13 on Windows included), and no compiler is needed where the wheel is
installed. Used when `_headroom_core` is absent (native_loader.core)."""
import ctypes
import json
import sys
from pathlib import Path

from . import binary_check

ABI_VERSION = 1


def library_name():
    if sys.platform == "win32":
        return "headroom_core.dll"
    if sys.platform == "darwin":
        return "libheadroom_core.dylib"
    return "libheadroom_core.so"


class CoreInputError(ValueError):
    """Bad input or a malformed file: the core's message names the field and the fix."""


class CapiCore:
    """Answers like _headroom_core: catalog() and each function(json_text) -> json_text."""

    InputError = CoreInputError

    def __init__(self, path):
        self.path = Path(path)
        self.__file__ = str(self.path)  # where the start-up log says the core came from
        binary_check.check_library(self.path)  # a truncated file must not take ComfyUI down (SIGBUS)
        lib = ctypes.CDLL(str(self.path))
        lib.headroom_call.restype = ctypes.c_void_p
        lib.headroom_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.headroom_free.restype = None
        lib.headroom_free.argtypes = [ctypes.c_void_p]
        lib.headroom_abi_version.restype = ctypes.c_int
        abi = lib.headroom_abi_version()
        if abi != ABI_VERSION:
            raise ImportError(f"{self.path}: interface version {abi}, the nodes expect {ABI_VERSION}")
        self._lib = lib

    def _call(self, function, request):
        ptr = self._lib.headroom_call(function.encode(), json.dumps(request).encode())
        if not ptr:
            raise MemoryError("headroom_core: no memory for the answer")
        try:
            answer = json.loads(ctypes.string_at(ptr).decode("utf-8"))
        finally:
            self._lib.headroom_free(ptr)
        if "ok" in answer:
            return json.dumps(answer["ok"])
        err = answer["error"]
        if err.get("kind") in ("input", "file"):
            raise CoreInputError(err.get("message", "bad input"))
        raise RuntimeError(err.get("message", "internal error"))

    def catalog(self):
        return self._call("catalog", {})

    def inspect(self, paths):
        return self._call("inspect", {"paths": list(paths)})

    def explain(self, text):
        return self._call("explain", {"text": text})

    def __getattr__(self, function):
        # estimate, plan, apply_preset, recognise, llm, train: a JSON request text each
        if function.startswith("_"):
            raise AttributeError(function)
        return lambda request_json: self._call(function, json.loads(request_json))


def candidates(build_dir: Path):
    """Where the library may be: the installed headroom_core wheel, then this pack's build."""
    out = []
    try:
        import headroom_core  # the wheel's ctypes package (native/capi/python)
        out.append(Path(headroom_core.library_path()))
    except Exception:  # noqa: BLE001 - absent or broken: the build folder may still have one
        pass
    out.append(build_dir / "capi" / library_name())
    return out
