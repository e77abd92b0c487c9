"""VAE Decode (Headroom) when no native decoder loads: ComfyUI's own tiled decode (VAE.decode_tiled), with
the largest tile whose peak Headroom's estimator puts inside the budget. Never one whole, unbudgeted
decode: that is what ran out of memory in the first place, and what the node promises not to do."""
import json

from . import comfy_adapters

# Tile edges tried, in latent pixels, largest first. ComfyUI's decode_tiled runs three passes with
# tiles of t x t, t/2 x 2t and 2t x t/2 (comfy/sd.py decode_tiled_), all of one area, so the estimate of
# its VAEDecodeTiled node at tile t prices every pass.
TILE_CANDIDATES_LATENT = (256, 192, 128, 96, 64, 48, 32, 24, 16, 8)


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


def _decode_peak(core, model, geometry, tile_px):
    request = {"model": model, "width": geometry["width"], "height": geometry["height"], "batch": 1,
               "decode_mode": "tiled", "decode_tile_px": int(tile_px)}
    if geometry["frames"] > 1:
        request["frames"] = geometry["frames"]
    stages = json.loads(core.estimate(json.dumps(request))).get("stages", [])
    return max((int(s.get("peak_bytes", 0)) for s in stages), default=0)


def plan_tile(core, model, latent, spatial_upscale, budget_bytes):
    """(tile, overlap, planned peak or None): the largest candidate tile whose tiled-decode peak fits."""
    video = latent.dim() == 5
    geometry = comfy_adapters.latent_geometry({"samples": latent})
    geometry["width"] = int(latent.shape[-1]) * spatial_upscale
    geometry["height"] = int(latent.shape[-2]) * spatial_upscale
    edge = max(int(latent.shape[-1]), int(latent.shape[-2]))
    # Past the latent's own edge a bigger tile changes nothing: start from the first candidate that covers it.
    candidates = [t for t in TILE_CANDIDATES_LATENT if t < edge]
    candidates.insert(0, min([t for t in TILE_CANDIDATES_LATENT if t >= edge], default=TILE_CANDIDATES_LATENT[0]))
    peak = None
    for tile in candidates:
        # ComfyUI's estimate of VAEDecodeTiled takes the tile in pixels, with no tile below 64 px.
        peak = _decode_peak(core, model, geometry, max(64, tile * spatial_upscale))
        if budget_bytes is None or peak <= budget_bytes:
            return tile, max(2 if video else 4, tile // 4), peak
    return candidates[-1], max(2, candidates[-1] // 4), peak


def decode(vae, latent, budget_bytes, why_not_native, core, spatial_upscale):
    """ComfyUI's tiled decode inside the budget. Returns (image, report text)."""
    video = latent.dim() == 5
    model, why_unknown = (None, "the estimator core is not loaded either") if core is None else recognised_vae(core, vae)
    if model is None:
        # ComfyUI's decode_tiled picks its own tiles when given none (comfy/sd.py): no copy of them here.
        tile, overlap = None, None
        how = f"ComfyUI's default tiles ({why_unknown})"
        peak = None
    else:
        tile, overlap, peak = plan_tile(core, model, latent, spatial_upscale, budget_bytes)
        budget_text = "no budget" if budget_bytes is None else f"budget {budget_bytes / 2**30:.2f} GiB"
        how = f"tile from Headroom's plan for {model} at {budget_text}"
        if peak is not None:
            how += f", planned peak {peak / 2**30:.2f} GiB"
            if budget_bytes is not None and peak > budget_bytes:
                how += " (over the budget even at the smallest tile)"
    kwargs = {} if tile is None else {"tile_x": tile, "tile_y": tile, "overlap": overlap}
    if video:
        kwargs["overlap_t"] = 1  # whole clip per tile where ComfyUI allows it: temporal seams blink
    image = vae.decode_tiled(latent, **kwargs)
    size = "ComfyUI's tile size" if tile is None else f"tile {tile} latent px, overlap {overlap}"
    text = f"ComfyUI tiled decode, {size} ({how}); the native decoder is unavailable: {why_not_native}"
    return image, text
