"""Headroom's estimator core for any Python: a plain C library (no torch, no pybind11) loaded with ctypes.

    import headroom_core
    model = headroom_core.call("catalog")["models"][0]["name"]
    headroom_core.call("estimate", {"model": model, "width": 1024, "height": 1024, "gpu": "4090"})

`call` returns the core's answer as a dict and raises ValueError with the core's message (which names
the field and the fix) on bad input or a malformed file, RuntimeError on an internal error."""
import ctypes
import json
import os
import sys

__all__ = ["call", "version", "library_path", "HeadroomInputError"]

ABI_VERSION = 1


class HeadroomInputError(ValueError):
    """Bad input or a malformed file; `field` names the request field or file the message is about."""

    def __init__(self, message, field=None, kind="input"):
        super().__init__(message)
        self.field = field
        self.kind = kind


def _library_name():
    if sys.platform == "win32":
        return "headroom_core.dll"
    if sys.platform == "darwin":
        return "libheadroom_core.dylib"
    return "libheadroom_core.so"


def library_path():
    """The library beside this file, or HEADROOM_CORE_LIBRARY (a development build)."""
    return os.environ.get("HEADROOM_CORE_LIBRARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                   _library_name())


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    lib.headroom_call.restype = ctypes.c_void_p  # a pointer we free ourselves, not a copied bytes object
    lib.headroom_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.headroom_free.restype = None
    lib.headroom_free.argtypes = [ctypes.c_void_p]
    lib.headroom_version.restype = ctypes.c_char_p
    lib.headroom_abi_version.restype = ctypes.c_int
    abi = lib.headroom_abi_version()
    if abi != ABI_VERSION:
        raise ImportError(f"{library_path()}: interface version {abi}, this headroom_core expects {ABI_VERSION}; "
                          f"reinstall headroom_core")
    _lib = lib
    return lib


def version():
    return _load().headroom_version().decode()


def call(name, request=None):
    """Runs the core's `name` (catalog, estimate, plan, apply_preset, suggest_preset, inspect, explain, llm, train)."""
    lib = _load()
    text = json.dumps({} if request is None else request, allow_nan=False)
    ptr = lib.headroom_call(name.encode("utf-8"), text.encode("utf-8"))
    if not ptr:
        raise MemoryError("headroom_core: no memory for the answer")
    try:
        answer = json.loads(ctypes.string_at(ptr).decode("utf-8"))
    finally:
        lib.headroom_free(ptr)
    if "ok" in answer:
        return answer["ok"]
    err = answer["error"]
    if err["kind"] in ("input", "file"):
        raise HeadroomInputError(err["message"], err.get("field"), err["kind"])
    raise RuntimeError(err["message"])
