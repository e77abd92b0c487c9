"""Headroom's estimator core for any Python: a plain C library (no torch, no pybind11) loaded with ctypes.

    import headroom_core
    model = headroom_core.call("catalog")["models"][0]["name"]
    headroom_core.call("estimate", {"model": model, "width": 1024, "height": 1024, "gpu": "4090"})

`call` returns the core's answer as a dict and raises ValueError with the core's message (which names
the field and the fix) on bad input or a malformed file, RuntimeError on an internal error.

The ctypes client itself is the ComfyUI pack's (nodes/native/core_capi.py, with the check that a library
file is whole before it is mapped, binary_check.py): the wheel installs both beside this file, so the
pack and the wheel load the library one way."""
import json
import os

from . import core_capi

__all__ = ["call", "version", "library_path", "HeadroomInputError"]

ABI_VERSION = core_capi.ABI_VERSION
HeadroomInputError = core_capi.CoreInputError  # ValueError; .field names the request field or file, .kind


def library_path():
    """The library beside this file, or HEADROOM_CORE_LIBRARY (a development build)."""
    return os.environ.get("HEADROOM_CORE_LIBRARY") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                   core_capi.library_name())


_client = None


def _load():
    global _client
    if _client is None:
        _client = core_capi.CapiCore(library_path())
    return _client


def version():
    return _load().version


def call(name, request=None):
    """Runs the core's `name` (catalog, estimate, plan, apply_preset, suggest_preset, decode_tile, inspect,
    explain, llm, train, runs, calibrate)."""
    text = json.dumps({} if request is None else request, allow_nan=False)
    return json.loads(_load().call_text(name, text))
