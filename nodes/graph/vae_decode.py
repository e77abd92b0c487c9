"""HeadroomVAEDecode: decodes inside a memory budget without seams.

KL (SD/Flux), FLUX.2 and Wan VAEs run on Headroom's native decoders; any other VAE is decoded by ComfyUI's own
VAE through the native tiler (`decode_blend`), spatial tiles only for video so each tile sees the whole
clip (temporal tiles make Wan video blink). Follows ComfyUI's fallback hygiene: room is made first, and an
out-of-memory retry runs only after the `except` block has released the failed attempt's tensors. The
room is made by unloading cached models only until what the core expects the decode to need is free
(decode_need.py), not every model: under dynamic VRAM ComfyUI does not do it for us (decode_room.py), and
what stays loaded need not be read again by the next run."""
import os
import re
import sys
import time

from ..comfyui import budget as budget_mod
from ..comfyui import comfy_adapters, comfy_tiled_decode, decode_need
from ..native import native_loader

MODES = ["auto", "full", "exact", "fast", "blend"]
NATIVE_FAMILIES = ("kl", "flux2", "wan2.1", "wan2.2")
# FLUX.2's VAE is a KL decoder behind a pointwise front end (inverse BatchNorm, 2x2 unpatchify), so its
# modes behave as the KL decoder's.
KL_DECODERS = ("kl", "flux2")

# ComfyUI's own tiled fallback (comfy/sd.py VAE.decode): 64-latent tiles with 16 overlap for images,
# 256 px // compression with a quarter overlap for video.
IMAGE_TILE_LATENT, IMAGE_OVERLAP_LATENT = 64, 16
VIDEO_TILE_PX = 256


def _mm():
    return sys.modules.get("comfy.model_management")


def _is_oom(error) -> bool:
    mm = _mm()
    oom_type = getattr(mm, "OOM_EXCEPTION", None) if mm else None
    if oom_type is not None and oom_type is not Exception and isinstance(error, oom_type):
        return True
    torch = sys.modules.get("torch")
    cuda_oom = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None) if torch else None
    if cuda_oom is not None and isinstance(error, cuda_oom):
        return True
    return "out of memory" in str(error).lower()


class _Progress:
    """Native progress callbacks -> ComfyUI's progress bar (which also raises on interrupt).

    The native decoders count fine steps (exact mode: one per tile per layer, 139,264 for a 1024 px
    image), and every ProgressBar update is a websocket message. So the bar shows at most STEPS steps
    and is updated at most every MIN_INTERVAL_S seconds (and at the end): <= 10 messages a second.
    Cancelling does not depend on this: the decoders poll `cancel` between tiles."""

    STEPS = 100
    MIN_INTERVAL_S = 0.1

    def __init__(self, clock=time.monotonic):
        self.bar = None
        self.shown = -1
        self.last = None
        self.clock = clock

    def __call__(self, done, total):
        try:
            import comfy.utils
        except ImportError:
            return
        if total <= 0:
            return
        steps = min(self.STEPS, total)
        value = min(steps, done * steps // total)
        now = self.clock()
        if value <= self.shown or (value < steps and self.last is not None and now - self.last < self.MIN_INTERVAL_S):
            return
        if self.bar is None:
            self.bar = comfy.utils.ProgressBar(steps)
        self.bar.update_absolute(value, steps)
        self.shown, self.last = value, now


def _cancelled() -> bool:
    mm = _mm()
    return bool(mm and mm.processing_interrupted())


def _raise_if_interrupted():
    mm = _mm()
    if mm is not None:
        mm.throw_exception_if_processing_interrupted()


def evict_other_models():
    """Unload every model ComfyUI holds on the GPU so the decode gets the card (the VAE weights are
    handed to the native decoder as a state dict, so it does not need ComfyUI to keep them loaded). The
    fallback when the decode's need is unknown (no core, or a VAE the catalog does not know)."""
    mm = _mm()
    if mm is None:
        return
    mm.unload_all_models()
    mm.soft_empty_cache()


def _vae_upscale(vae, video: bool):
    """[h, w] or [t, h, w] factors for decode_blend from ComfyUI's VAE.upscale_ratio (an int for images;
    (frames lambda, h, w) for video VAEs, e.g. Wan's `lambda a: max(0, a * 4 - 3)` -> 4)."""
    ratio = getattr(vae, "upscale_ratio", 8)
    if isinstance(ratio, (tuple, list)):
        spatial = int(ratio[-1])
        first = ratio[0]
        temporal = int(first(2) - first(1)) if callable(first) else int(first)
    else:
        spatial, temporal = int(ratio), 4
    return [temporal, spatial, spatial] if video else [spatial, spatial]


def _comfy_decode_fn(vae):
    """ComfyUI's decode of one latent tile, channels first like the latent ([B,3,(T),H,W])."""
    def fn(tile):
        return vae.decode(tile).movedim(-1, 1)
    return fn


def decode_budget_bytes(budget):
    """The decode's budget in bytes (None: no limit, i.e. no GPU and no number given). A GPU name counts as
    that card's memory less ComfyUI's reserve; any other text is an error naming the field (it used to be
    ignored, so "abc" decoded without a budget)."""
    fields = budget_mod.resolve(budget, reserve_applied_by_core=False)
    if "gpu" in fields:
        memory = budget_mod.gpu_memory_bytes(fields["gpu"])  # an unknown card was refused by resolve()
        if memory is None:  # no core to say what the card holds
            raise ValueError(f"budget: expected 'auto', a number of GB or a GPU name Headroom knows (such as "
                             f"'RTX 4090 24GB'), got {fields['gpu']!r}")
        return max(1, memory - budget_mod.reserve_bytes())
    return fields.get("vram_bytes")


# The decode planner's advice names a tile size, an input of its API that this node does not have.
_PLANNER_ADVICE = re.compile(r";\s*raise the budget \(free VRAM\) or lower the tile\s*$")


def _native_mode(family, mode: str, retry: bool) -> str:
    """The native decoder's mode for the node's. `fast` on a KL VAE runs exact: its halo tiles were measured
    at twice full's time and more memory than exact (BENCHMARKS.md, KL decode), so exact wins on both; on
    Wan VAEs the native `fast` is the feathered blend. After an out-of-memory error, auto and full retry
    exact."""
    if retry and mode in ("auto", "full"):
        return "exact"
    if mode == "fast" and family in KL_DECODERS:
        return "exact"
    return mode


def _node_budget_error(error: ValueError, mode: str) -> ValueError:
    text = _PLANNER_ADVICE.sub("", str(error))
    if mode in ("exact", "auto"):  # auto tiles with exact when a full decode does not fit
        advice = "raise this node's budget, or free VRAM (close other programs on the card)"
    else:
        advice = "raise this node's budget, or set mode to auto or exact (they need the least memory)"
    return ValueError(f"{text}; {advice}")


def _budget_follows_free(budget) -> bool:
    """True when the node's budget is free VRAM (auto, and no HEADROOM_BUDGET pins another)."""
    if budget is not None and not (isinstance(budget, str) and budget.strip().lower() in ("", "auto")):
        return False
    override = os.environ.get("HEADROOM_BUDGET")
    return not override or override.strip().lower() == "auto"


def _with_room(text: str, room: str) -> str:
    return f"{text}\nroom for the decode: {room}" if room else text


class HeadroomVAEDecode:
    CATEGORY = "Headroom"
    FUNCTION = "decode"
    RETURN_TYPES = ("IMAGE",)
    DESCRIPTION = ("VAE Decode that fits the memory budget: Headroom's native decoders for SD/Flux (KL), "
                   "FLUX.2 and Wan VAEs, ComfyUI's decode through Headroom's seamless tiler for others.")

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "samples": ("LATENT",),
                "vae": ("VAE",),
                "mode": (MODES, {"default": "auto", "tooltip": "auto: whole decode when it fits, else exact "
                                 "tiles (never fast); full: no tiles; exact: tiles with shared GroupNorm "
                                 "statistics (same image as full, least memory); fast: kept for old workflows: on "
                                 "SD/Flux/FLUX.2 VAEs it runs exact, which needs less memory and time than tiles "
                                 "with recomputed halos (measured: those took twice as long as full), on "
                                 "Wan VAEs the feathered blend; blend: ComfyUI's decode per tile, feathered "
                                 "together."}),
                "budget": ("STRING", {"default": "auto", "tooltip": "auto = free VRAM as ComfyUI counts it, "
                                      "a number of GB, or a GPU name such as 'RTX 4090 24GB'."}),
            }
        }

    def decode(self, samples, vae, mode="auto", budget="auto"):
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        latent = comfy_adapters.latent_tensor(samples)
        budget_bytes = decode_budget_bytes(budget)  # validates the widget before anything is unloaded
        follows_free = _budget_follows_free(budget)
        try:
            core = native_loader.core()
        except native_loader.NativeUnavailable:
            core = None
        recognised = comfy_tiled_decode.recogniser(core, vae)
        room = decode_need.make_room_for_decode(core, recognised, latent, mode,
                                                _vae_upscale(vae, latent.dim() == 5)[-1],
                                                None if follows_free else budget_bytes, evict_other_models)
        if follows_free:
            budget_bytes = decode_budget_bytes(budget)  # what is really free now, after the room was made
        try:
            ops = native_loader.torch_ops()
        except native_loader.NativeUnavailable as e:
            upscale = _vae_upscale(vae, latent.dim() == 5)[-1]
            image, text = comfy_tiled_decode.decode(vae, latent, budget_bytes, e, core, upscale, recognised)
            return self._done(self._as_image(image), _with_room(text, room))

        state_dict = comfy_adapters.vae_state_dict(vae)
        family = None
        if mode != "blend":
            try:
                family = ops.detect_vae_family(state_dict)
            except ValueError:
                family = None

        ran_out = False
        try:
            image, info = self._run(ops, family, state_dict, vae, latent, mode, budget_bytes, retry=False)
        except Exception as e:  # noqa: BLE001 - only OOM is handled, the rest re-raises
            if isinstance(e, ValueError) and str(e).startswith("budget:"):
                raise _node_budget_error(e, _native_mode(family, mode, False)) from None
            if not _is_oom(e):
                cancelled = getattr(ops, "DecodeCancelled", None)
                if (cancelled is not None and isinstance(e, cancelled)) or "decode cancelled" in str(e):
                    _raise_if_interrupted()  # ComfyUI's own InterruptProcessingException
                raise
            ran_out = True
        if ran_out:
            # Outside the except block: the failed attempt's tensors are unreferenced now.
            mm = _mm()
            if mm is not None:
                if room:
                    # The estimate of the need fell short: the retry gets the card, as ComfyUI's own would.
                    evict_other_models()
                    room += "; out of memory all the same, so every model was unloaded for the retry"
                    if follows_free:
                        budget_bytes = decode_budget_bytes(budget)
                mm.soft_empty_cache()
            try:
                image, info = self._run(ops, family, state_dict, vae, latent, mode, budget_bytes, retry=True)
            except ValueError as e:
                if str(e).startswith("budget:"):
                    raise _node_budget_error(e, mode) from None
                raise
            info["retried_after_oom"] = True
        return self._done(image, _with_room(self._summary(info), room))

    def _run(self, ops, family, state_dict, vae, latent, mode, budget_bytes, retry):
        progress = _Progress()
        if family in NATIVE_FAMILIES and mode != "blend":
            native_mode = _native_mode(family, mode, retry)
            image, info = ops.decode(state_dict, latent, mode=native_mode, tile_px=0, budget_bytes=budget_bytes,
                                     progress=progress, cancel=_cancelled)
            info = dict(info)
            if native_mode != mode and not retry:
                info["asked_mode"] = mode
            return image, info
        video = latent.dim() == 5
        upscale = _vae_upscale(vae, video)
        if video:
            tile = max(8, VIDEO_TILE_PX // upscale[-1])
            overlap = tile // 4
        else:
            tile, overlap = IMAGE_TILE_LATENT, IMAGE_OVERLAP_LATENT
        if retry:
            tile, overlap = max(8, tile // 2), max(2, overlap // 2)
        if mode == "full" and not retry:
            pixels = _comfy_decode_fn(vae)(latent)
            return comfy_adapters.image_from_channels_first(pixels), {"family": "comfy", "mode": "full", "tiles": 1}
        pixels = ops.decode_blend(_comfy_decode_fn(vae), latent, tile, overlap, upscale,
                                  progress=progress, cancel=_cancelled)
        info = {"family": family or "comfy", "mode": "blend", "tile_latent": tile, "halo_latent": overlap}
        return comfy_adapters.image_from_channels_first(pixels), info

    @staticmethod
    def _as_image(image):
        return image.reshape(-1, *image.shape[-3:]) if image.dim() == 5 else image

    @staticmethod
    def _summary(info: dict) -> str:
        parts = [f"{info.get('family', '?')} VAE, {info.get('mode', '?')} decode"]
        if info.get("tiles"):
            parts.append(f"{info['tiles']} tile(s)")
        if info.get("tile_latent"):
            parts.append(f"tile {info['tile_latent']} latent px, overlap/halo {info.get('halo_latent', 0)}")
        if info.get("planned_peak_bytes"):
            parts.append(f"planned peak {info['planned_peak_bytes'] / 2**30:.2f} GiB")
        if info.get("asked_mode") == "fast":
            parts.append("fast asked: exact ran instead (on this VAE it needs less memory and time than fast "
                         "tiles with recomputed halos, and gives the whole decode's image)")
        if info.get("retried_after_oom"):
            parts.append("retried tiled after running out of memory")
        return ", ".join(parts)

    @staticmethod
    def _done(image, text):
        return {"ui": {"text": [text]}, "result": (image,)}
