"""HeadroomExplainOOM: an out-of-memory message (or the last failed run's) -> diagnosis and fixes."""
import json
import platform
import sys

from ..comfyui import comfy_adapters, comfy_runtime
from ..native import native_loader

_OS_NAMES = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}
# The console lines sent with the last failed run: ComfyUI's own memory lines before the error ("Requested
# to load", "Got an OOM, unloading all loaded models", the tiled-VAE retry) are in its last few dozen.
TAIL_LINES = 40
TAIL_ENTRIES = 400  # app.logger keeps 300 writes by default; a write may be part of a line


def context_line(system=None, loader=None) -> str:
    """The line that tells the core where the error happened (native/core/oom/oom_parse.hpp): in ComfyUI,
    on this machine's OS, with the loader that ran (comfy_runtime: dynamic VRAM or the legacy loader), so
    the fixes are ComfyUI's levers for that loader and allocator settings that work here."""
    os_name = _OS_NAMES.get(system or platform.system())
    loader = loader or comfy_runtime.detect().get("runtime")
    return ("headroom-context: app=comfyui" + (f" os={os_name}" if os_name else "") +
            (f" loader={loader}" if loader in ("dynamic", "legacy") else ""))


def console_tail(lines=TAIL_LINES) -> str:
    """The last lines of ComfyUI's console as its log buffer holds them (app.logger.get_logs, what the
    frontend's terminal shows), or "" outside ComfyUI. Looked up, never imported: the module is ComfyUI's."""
    get_logs = getattr(sys.modules.get("app.logger"), "get_logs", None)
    if not callable(get_logs):
        return ""
    try:
        entries = list(get_logs() or [])[-TAIL_ENTRIES:]
    except Exception:  # a log buffer we cannot read is no reason to explain nothing
        return ""
    text = "".join(e["m"] for e in entries if isinstance(e, dict) and isinstance(e.get("m"), str))
    return "\n".join(line for line in text.replace("\r", "\n").splitlines()[-lines:] if line.strip())


def explain_text(text: str, run_fields: str = "") -> dict:
    """The core's diagnosis of an error text from this ComfyUI (the text's own evidence wins); run_fields
    go on the same context line (the core reads one): a run the previous process left unfinished."""
    extra = f" {run_fields}" if run_fields else ""
    return json.loads(native_loader.core().explain(f"{text}\n{context_line()}{extra}\n"))


def format_explanation(result: dict) -> str:
    lines = []
    if not result.get("recognised", result.get("recognized", True)):
        lines.append("Not recognised as an out-of-memory error.")
    diagnosis = result.get("diagnosis")
    if isinstance(diagnosis, dict):  # the core gives {id, text}
        diagnosis = diagnosis.get("text") or diagnosis.get("id")
    if diagnosis:
        lines.append(str(diagnosis))
    fixes = result.get("fixes") or []
    if fixes:
        lines.append("Fixes:")
        for i, fix in enumerate(fixes):
            text = fix.get("text") or fix.get("description") or fix.get("title") if isinstance(fix, dict) else fix
            lines.append(f"  {i + 1}. {text}")
    return "\n".join(lines) or "No diagnosis."


class HeadroomExplainOOM:
    CATEGORY = "Headroom"
    FUNCTION = "explain"
    RETURN_TYPES = ("STRING",)
    RETURN_NAMES = ("diagnosis",)
    OUTPUT_NODE = True
    DESCRIPTION = "Explains a CUDA out-of-memory error: what asked for how much, who held the card, what to change."

    @classmethod
    def INPUT_TYPES(cls):
        return {"optional": {"error_text": ("STRING", {"default": "", "multiline": True,
                                                        "tooltip": "Paste the error; empty = the last failed run."})}}

    def explain(self, error_text=""):
        text = (error_text or "").strip()
        run_fields = ""
        if not text:
            # The last failed run, with the console lines around it: what ComfyUI printed before the error
            # (its OOM hint, a tiled retry, "Killed") is often all that says what ran out.
            failed = comfy_adapters.last_execution_error()
            text = "\n".join(t for t in (failed, console_tail()) if t)
            if not failed:  # none in this process: the run the previous one died in, if there was one
                from ..server import unfinished_notice
                run = unfinished_notice.previous_run()
                run_fields = unfinished_notice.run_fields(run) if run is not None else ""
        if not text and not run_fields:
            out = "No error text given, no failed run in this session's history and no console output."
        else:
            try:
                out = format_explanation(explain_text(text, run_fields))
            except (native_loader.NativeUnavailable, ValueError, RuntimeError) as e:
                out = f"Headroom could not explain this error: {e}"
        return {"ui": {"text": [out]}, "result": (out,)}
