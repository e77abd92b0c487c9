"""HeadroomExplainOOM: an out-of-memory message (or the last failed run's) -> diagnosis and fixes."""
from . import comfy_adapters, native_loader


def explain_text(text: str) -> dict:
    import json
    return json.loads(native_loader.core().explain(text))


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
