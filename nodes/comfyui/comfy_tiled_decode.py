"""VAE Decode (Headroom) when no native decoder loads: ComfyUI's own tiled decode (VAE.decode_tiled), with
the largest tile whose peak Headroom's estimator puts inside the budget, chosen by the core in one request
(api::decode_tile: its candidates, the latent-edge rule and the overlap live there). Never one whole,
unbudgeted decode: that is what ran out of memory in the first place, and what the node promises not to do."""
import json

from . import comfy_adapters


def state_dict_spec(vae):
    """{name: {dtype, shape}} of the VAE's weights, what the core's recogniser reads (no tensor data)."""
    spec = {}
    for name, t in comfy_adapters.vae_state_dict(vae).items():
        if hasattr(t, "shape") and hasattr(t, "dtype"):
            spec[name] = {"dtype": comfy_adapters.dtype_text(t.dtype), "shape": [int(d) for d in t.shape]}
    return spec


def recognised_vae(core, vae):
    """The catalog name of this VAE, or (None, why)."""
    try:
        answer = json.loads(core.recognise(json.dumps({"tensors": state_dict_spec(vae)})))
    except (ValueError, RuntimeError, AttributeError) as e:
        return None, f"the VAE could not be recognised ({e})"
    role = (answer.get("recognised") or {}).get("role")
    if not answer.get("model") or role != "vae":
        return None, "the VAE is not one Headroom's catalog knows"
    return answer["model"], None


def recogniser(core, vae):
    """A callable answering recognised_vae for this VAE, asking the core at most once: one decode needs the
    name for its room and again for its tiles, and each asking walks every weight of the VAE."""
    answer = []

    def recognised():
        if not answer:
            answer.append((None, "the estimator core is not loaded") if core is None else recognised_vae(core, vae))
        return answer[0]
    return recognised


def plan_tile(core, model, latent, spatial_upscale, budget_bytes):
    """(tile, overlap, planned peak, over budget): the core's choice (api::decode_tile), in one request.
    The core prices its candidate tiles with its model of ComfyUI's tiled decode (three passes of one area
    for images, comfy/sd.py decode_tiled_) and answers the largest that fits, or the smallest, flagged."""
    request = {"model": model, "latent_width": int(latent.shape[-1]), "latent_height": int(latent.shape[-2]),
               "batch": int(latent.shape[0]), "spatial_upscale": int(spatial_upscale)}
    if latent.dim() == 5:
        request["latent_frames"] = int(latent.shape[2])
    if budget_bytes is not None:
        request["budget_bytes"] = int(budget_bytes)
    answer = json.loads(core.decode_tile(json.dumps(request)))
    return answer["tile_latent"], answer["overlap_latent"], answer["peak_bytes"], answer["over_budget"]


def _planned_tile(core, recognised, latent, spatial_upscale, budget_bytes):
    """(tile, overlap, how it was chosen) for decode_tiled; tile None = ComfyUI's own default tiles."""
    model, why_unknown = recognised()
    if model is not None:
        try:
            tile, overlap, peak, over = plan_tile(core, model, latent, spatial_upscale, budget_bytes)
        except (ValueError, RuntimeError, KeyError, AttributeError) as e:
            model, why_unknown = None, f"the core chose no tile for {model}: {e}"
    if model is None:
        # ComfyUI's decode_tiled picks its own tiles when given none (comfy/sd.py): no copy of them here.
        return None, None, f"ComfyUI's default tiles ({why_unknown})"
    budget_text = "no budget" if budget_bytes is None else f"budget {budget_bytes / 2**30:.2f} GiB"
    how = f"tile from Headroom's plan for {model} at {budget_text}, planned peak {peak / 2**30:.2f} GiB"
    if over:
        how += " (over the budget even at the smallest tile)"
    return tile, overlap, how


def decode(vae, latent, budget_bytes, why_not_native, core, spatial_upscale, recognised=None):
    """ComfyUI's tiled decode inside the budget. Returns (image, report text). `recognised`: the decode's
    recogniser(core, vae), so the VAE is not recognised again."""
    video = latent.dim() == 5
    tile, overlap, how = _planned_tile(core, recognised or recogniser(core, vae), latent, spatial_upscale,
                                       budget_bytes)
    kwargs = {} if tile is None else {"tile_x": tile, "tile_y": tile, "overlap": overlap}
    if video:
        kwargs["overlap_t"] = 1  # whole clip per tile where ComfyUI allows it: temporal seams blink
    image = vae.decode_tiled(latent, **kwargs)
    size = "ComfyUI's tile size" if tile is None else f"tile {tile} latent px, overlap {overlap}"
    text = f"ComfyUI tiled decode, {size} ({how}); the native decoder is unavailable: {why_not_native}"
    return image, text
