"""Room on the card for a VAE decode: free cached models through ComfyUI until the decode's need fits.

Under dynamic VRAM the cached models' weights are not in the way: comfy-aimdo evicts them on demand
when the decode allocates ("the dynamic VRAM system will just kick the cached stuff out on demand",
rattus128 in Comfy-Org/ComfyUI#15274), and ModelPatcher.get_free_memory counts them as free
(model_management.get_free_memory + comfy_aimdo.model_vbar.vbars_analyze, comfy/model_patcher.py@08d0e510).
Unloading them would only make the next run load them again, so under dynamic VRAM we count them as
free and unload nothing that aimdo can evict: free_memory(..., for_dynamic=True) frees only models on
the legacy loader (GGUF). Comfy-Org/ComfyUI#15453 (a decode that failed with "0 models unloaded") is
an open bug of one VAE whose tiled retry is a no-op (fix PR #15456), not a rule for every VAE.
On the legacy loader (ComfyUI before 0.15, --disable-dynamic-vram) nothing is evicted on demand: we
ask ComfyUI to unload models until what the decode needs is free, and no more.
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
    from . import budget, comfy_runtime
    dynamic = bool(comfy_runtime._aimdo_enabled())
    evictable = budget.evictable_bytes(dev)  # 0 unless comfy-aimdo runs
    free = int(mm.get_free_memory(dev)) + evictable
    out["free_before"] = out["free_after"] = free
    gib = 1024 ** 3
    if free >= need_bytes:
        out["note"] = ("enough VRAM is free once dynamic VRAM evicts cached weights on demand "
                       f"({evictable / gib:.2f} GiB evictable); no model unloaded" if dynamic
                       else "enough VRAM was free; no model unloaded")
        return out
    keep_loaded = [m for m in getattr(mm, "current_loaded_models", []) if m in keep or getattr(m, "model", None) in keep]
    kwargs = {"keep_loaded": keep_loaded}
    if _takes(mm.free_memory, "for_dynamic"):
        # Under dynamic VRAM only models aimdo cannot evict (the legacy loader's) are worth unloading.
        kwargs["for_dynamic"] = dynamic
    unloaded = mm.free_memory(int(need_bytes - evictable), dev, **kwargs) or []
    mm.soft_empty_cache()
    out["unloaded"] = [_name(m) for m in unloaded]
    out["free_after"] = int(mm.get_free_memory(dev)) + budget.evictable_bytes(dev)
    if out["unloaded"]:
        out["note"] = (f"unloaded {', '.join(out['unloaded'])} to free {(out['free_after'] - free) / gib:.2f} GiB "
                       f"for the decode ({out['free_after'] / gib:.2f} GiB free now)")
    else:
        out["note"] = (f"the decode wanted {need_bytes / gib:.2f} GiB but ComfyUI could free nothing "
                       f"({free / gib:.2f} GiB free): tiles are sized to that")
    return out
