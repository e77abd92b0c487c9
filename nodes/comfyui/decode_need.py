"""What a VAE decode needs on the card, from the core's estimate of the VAE alone at the latent's size, and
the room made for it (decode_room.make_room) before VAE Decode (Headroom) sizes its tiles.

The need is the decode stage's own peak (`own_peak_bytes`: the VAE's weights and activations, no cached
model), for the decode the node's mode will try first: auto and full try the whole decode, the other modes
tile. Without the core, or for a VAE its catalog does not know, there is no need to free up to, and every
model is unloaded as ComfyUI's own fallback does."""
import json

from . import budget as budget_mod
from . import comfy_adapters, comfy_tiled_decode, decode_room

# The core's decode_mode for the decode each node mode tries first (api estimate "decode_mode").
_CORE_DECODE_MODE = {"auto": "full", "full": "full", "exact": "headroom", "fast": "headroom", "blend": "tiled"}


def decode_need_bytes(core, recognised, latent, mode: str, spatial_upscale: int):
    """(bytes, model name) the core expects the decode to need, or (None, why not). `recognised`:
    comfy_tiled_decode.recogniser(core, vae)."""
    model, why = recognised()
    if model is None:
        return None, why
    geometry = comfy_adapters.latent_geometry({"samples": latent})
    request = {"model": model, "width": int(latent.shape[-1]) * spatial_upscale,
               "height": int(latent.shape[-2]) * spatial_upscale, "batch": geometry["batch"],
               "decode_mode": _CORE_DECODE_MODE.get(mode, "full")}
    if geometry["frames"] > 1:
        request["frames"] = geometry["frames"]
    try:
        answer = json.loads(core.estimate(json.dumps(comfy_adapters.with_runtime(request))))
    except (ValueError, RuntimeError, TypeError) as e:
        return None, f"the core could not estimate the decode ({e})"
    need = answer.get("own_peak_bytes")
    if need is None:
        need = max((int(s.get("peak_bytes") or 0) for s in answer.get("stages") or []), default=0) or None
    return (int(need), model) if need else (None, "the core gave no peak for the decode")


def make_room_for_decode(core, recognised, latent, mode: str, spatial_upscale: int, budget_bytes,
                         evict_all) -> str:
    """Frees what the decode needs (capped at the node's own budget, which is all it may use) and returns
    what was done, for the node's output text; "" outside ComfyUI. `core`: the estimator core or None;
    `recognised`: comfy_tiled_decode.recogniser(core, vae); `evict_all`: the fallback that unloads every
    model."""
    if decode_room._mm() is None:
        return ""
    need, model_or_why = decode_need_bytes(core, recognised, latent, mode, spatial_upscale)
    if need is None:
        evict_all()
        return f"unloaded every model for the decode (no estimate of its need: {model_or_why})"
    if budget_bytes is not None:
        need = min(need, budget_bytes)
    # The budget the tiles are sized to is free memory less ComfyUI's reserve, so the reserve must be free too.
    room = decode_room.make_room(need + budget_mod.reserve_bytes())
    return f"{model_or_why} decode needs {need / 2**30:.2f} GiB: {room['note']}"
