"""Room on the card for a VAE decode: free cached models through ComfyUI until the decode's need fits.

Under dynamic VRAM ComfyUI does not evict cached dynamic models to make room for another dynamic
model such as the VAE (model_management.free_memory skips them when asked `for_dynamic`), so a 16 GB
card holding ~14 GB of streamed DiT and text-encoder weights failed a 1.2 GiB decode with "0 models
unloaded" (Comfy-Org/ComfyUI#15453, 2026-08). Those weights are a cache: we ask ComfyUI to unload
models, the dynamic ones included, until what the decode needs is free, and no more, so the next run
does not reload what the decode never needed. The legacy loader (ComfyUI before 0.15) takes the same
call without the `for_dynamic` argument.
"""
import inspect
import sys


def _mm():
    return sys.modules.get("comfy.model_management")


def _takes(fn, name) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _name(loaded) -> str:
    model = getattr(getattr(loaded, "model", None), "model", None)
    return type(model).__name__ if model is not None else type(loaded).__name__


def make_room(need_bytes: int, device=None, keep=()) -> dict:
    """Unloads cached models until `need_bytes` are free on `device` (ComfyUI's free memory). Returns
    {need_bytes, free_before, free_after, unloaded: [class names], note}; free_* are None without
    ComfyUI. `keep` are LoadedModel entries (or their patchers) that must stay."""
    out = {"need_bytes": int(need_bytes), "free_before": None, "free_after": None, "unloaded": [], "note": ""}
    mm = _mm()
    if mm is None:
        out["note"] = "ComfyUI is not loaded: nothing to free"
        return out
    dev = device if device is not None else mm.get_torch_device()
    free = int(mm.get_free_memory(dev))
    out["free_before"] = out["free_after"] = free
    if free >= need_bytes:
        out["note"] = "enough VRAM was free; no model unloaded"
        return out
    keep_loaded = [m for m in getattr(mm, "current_loaded_models", []) if m in keep or getattr(m, "model", None) in keep]
    kwargs = {"keep_loaded": keep_loaded}
    if _takes(mm.free_memory, "for_dynamic"):
        kwargs["for_dynamic"] = False  # the decode is not a model ComfyUI will load on demand
    unloaded = mm.free_memory(int(need_bytes), dev, **kwargs) or []
    mm.soft_empty_cache()
    out["unloaded"] = [_name(m) for m in unloaded]
    out["free_after"] = int(mm.get_free_memory(dev))
    gib = 1024 ** 3
    if out["unloaded"]:
        out["note"] = (f"unloaded {', '.join(out['unloaded'])} to free {(out['free_after'] - free) / gib:.2f} GiB "
                       f"for the decode ({out['free_after'] / gib:.2f} GiB free now)")
    else:
        out["note"] = (f"the decode wanted {need_bytes / gib:.2f} GiB but ComfyUI could free nothing "
                       f"({free / gib:.2f} GiB free): tiles are sized to that")
    return out
