"""The estimator through the C library headroom_core (native/capi), loaded with ctypes: one binary serves
every Python (ComfyUI's embedded 3.13 on Windows included), and no compiler is needed where the wheel is
installed. Each function takes and returns JSON text, so the nodes (and their test stand-ins) need not
know what answers. ctypes releases the GIL for the length of each call, so ComfyUI's server keeps
answering while a plan runs. native_loader.core() checks the file's bytes and has this load those bytes.

The one ctypes client of the library: the headroom_core wheel installs this file and binary_check.py
beside its own __init__.py (CMakeLists.txt), which only adds the dict-in, dict-out `call` on top."""
import ctypes
import importlib.util
import json
import sys
from pathlib import Path

from . import binary_check

ABI_VERSION = 1
_OK_PREFIX = '{"ok":'


def library_name():
    if sys.platform == "win32":
        return "headroom_core.dll"
    if sys.platform == "darwin":
        return "libheadroom_core.dylib"
    return "libheadroom_core.so"


class CoreInputError(ValueError):
    """Bad input or a malformed file: the core's message names the field and the fix; `field` is the
    request field (or the file) it is about, `kind` "input" or "file"."""

    def __init__(self, message, field=None, kind="input"):
        super().__init__(message)
        self.field = field
        self.kind = kind


class CapiCore:
    """catalog() and each core function(json_text) -> json_text; InputError on bad input."""

    InputError = CoreInputError

    def __init__(self, path, load_from=None):
        """`path` is the library the user knows; `load_from`, where given, holds the very bytes the loader
        checked of it (native_loader._loadable), and is what gets mapped."""
        self.path = Path(path)
        self.__file__ = str(self.path)  # where the start-up log says the core came from
        source = str(load_from or self.path)
        binary_check.check_library(source)  # a truncated file must not take ComfyUI down (SIGBUS)
        lib = ctypes.CDLL(source)
        lib.headroom_call.restype = ctypes.c_void_p
        lib.headroom_call.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.headroom_free.restype = None
        lib.headroom_free.argtypes = [ctypes.c_void_p]
        lib.headroom_abi_version.restype = ctypes.c_int
        lib.headroom_version.restype = ctypes.c_char_p
        abi = lib.headroom_abi_version()
        if abi != ABI_VERSION:
            raise ImportError(f"{self.path}: interface version {abi}, the nodes expect {ABI_VERSION}")
        self._lib = lib
        self.version = lib.headroom_version().decode("utf-8", "replace")

    def call_text(self, function, request_text):
        """The core's answer to `function` as JSON text. The request goes in as the caller's text: parsed
        only by the core, whose reader caps nesting (Python's json would hit its recursion limit first)."""
        if not isinstance(request_text, str):
            raise TypeError(f"headroom_core {function}: expected the request as JSON text, got "
                            f"{type(request_text).__name__}")
        if "\x00" in request_text:  # the C string would end there and the core would read only a prefix
            raise CoreInputError("request: contains a NUL character, which JSON text never holds unescaped; "
                                 "send it as \\u0000 inside a string", "request")
        # surrogatepass: a lone surrogate reaches the core as bytes it rejects by name, not as a codec error
        ptr = self._lib.headroom_call(function.encode(), request_text.encode("utf-8", "surrogatepass"))
        if not ptr:
            raise MemoryError("headroom_core: no memory for the answer")
        try:
            text = ctypes.string_at(ptr).decode("utf-8", "replace")
        finally:
            self._lib.headroom_free(ptr)
        # The library writes compact JSON, so a success is exactly {"ok":<result>}: the result is handed on
        # as text, not parsed and written again (a plan of a large workflow runs to megabytes).
        if text.startswith(_OK_PREFIX) and text.endswith("}"):
            return text[len(_OK_PREFIX):-1]
        answer = json.loads(text)
        if "ok" in answer:
            return json.dumps(answer["ok"])
        err = answer["error"]
        if err.get("kind") in ("input", "file"):
            raise CoreInputError(err.get("message", "bad input"), err.get("field"), err["kind"])
        raise RuntimeError(err.get("message", "internal error"))

    def catalog(self):
        return self.call_text("catalog", "{}")

    def inspect(self, paths):
        return self.call_text("inspect", json.dumps({"paths": list(paths)}))

    def explain(self, text):
        return self.call_text("explain", json.dumps({"text": text}))

    def __getattr__(self, function):
        # estimate, plan, apply_preset, suggest_preset, recognise, llm, train: a JSON request text each
        if function.startswith("_"):
            raise AttributeError(function)
        return lambda request_json: self.call_text(function, request_json)


def candidates(build_dir: Path):
    """Where the library may be, in order: this pack's build (install.py made it from this very source),
    then the installed headroom_core wheel. The wheel's package is located, not imported."""
    out = [build_dir / "capi" / library_name()]
    try:
        spec = importlib.util.find_spec("headroom_core")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        out.append(Path(spec.origin).parent / library_name())
    return out
