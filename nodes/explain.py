"""HeadroomExplainOOM: an out-of-memory message (or the last failed run's) -> diagnosis and fixes."""
import json
import platform

from . import comfy_adapters, native_loader

_OS_NAMES = {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}


def context_line(system=None) -> str:
    """The line that tells the core where the error happened (native/core/oom/oom_parse.hpp): in ComfyUI,
    on this machine's OS, so the fixes are ComfyUI's levers and allocator settings that work here."""
    os_name = _OS_NAMES.get(system or platform.system())
    return "headroom-context: app=comfyui" + (f" os={os_name}" if os_name else "")


def explain_text(text: str) -> dict:
    """The core's diagnosis of an error text from this ComfyUI (the text's own evidence wins)."""
    return json.loads(native_loader.core().explain(f"{text}\n{context_line()}\n"))


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
        text = (error_text or "").strip() or comfy_adapters.last_execution_error()
        if not text:
            out = "No error text given and no failed run in this session's history."
        else:
            try:
                out = format_explanation(explain_text(text))
            except (native_loader.NativeUnavailable, ValueError, RuntimeError) as e:
                out = f"Headroom could not explain this error: {e}"
        return {"ui": {"text": [out]}, "result": (out,)}
