"""ComfyUI objects -> the few plain values the native core needs (and nothing about memory).

Everything is read through duck typing so the nodes run with small stand-ins in tests and do not
import ComfyUI here."""
import json

from ..server import calibration
from . import comfy_runtime

# Latent channels -> (pixels per latent pixel, latent frames -> pixel frames). Sources: ComfyUI
# comfy/latent_formats.py channel counts and comfy/sd.py upscale ratios (Wan 2.2 VAE: 48 ch, 16x;
# Wan 2.1 / Hunyuan video: 16 ch, 8x, 4t-3 frames; SD/Flux images: 8x).
_VIDEO_48CH_SCALE = 16
_DEFAULT_SCALE = 8


def latent_tensor(latent):
    if not isinstance(latent, dict) or "samples" not in latent:
        raise ValueError("samples: expected a LATENT (a dict with a 'samples' tensor)")
    return latent["samples"]


def latent_shape(latent):
    return [int(d) for d in latent_tensor(latent).shape]


def latent_geometry(latent) -> dict:
    """{width, height, frames, batch} in pixels, as the latent nodes' widgets would say."""
    shape = latent_shape(latent)
    if len(shape) == 4:
        b, _c, h, w = shape
        return {"width": w * _DEFAULT_SCALE, "height": h * _DEFAULT_SCALE, "frames": 1, "batch": b}
    if len(shape) == 5:
        b, c, t, h, w = shape
        scale = _VIDEO_48CH_SCALE if c == 48 else _DEFAULT_SCALE
        return {"width": w * scale, "height": h * scale, "frames": max(1, 4 * t - 3), "batch": b}
    raise ValueError(f"samples: expected a 4-D image or 5-D video latent, got shape {shape}")


def dtype_text(dtype) -> str:
    """torch.bfloat16 -> 'bfloat16': torch's own spelling, which the core maps to its precisions."""
    return str(dtype).replace("torch.", "")


def model_descriptor(model) -> dict:
    """MODEL (a ModelPatcher) -> {config, dim, precision, params}; empty fields when unknown."""
    inner = getattr(model, "model", model)
    config = getattr(inner, "model_config", None)
    unet = getattr(config, "unet_config", {}) or {}
    dtype = None
    if hasattr(inner, "get_dtype"):
        try:
            dtype = inner.get_dtype()
        except Exception:
            dtype = None
    params = None
    diffusion = getattr(inner, "diffusion_model", None)
    if diffusion is not None and hasattr(diffusion, "parameters"):
        params = sum(p.numel() for p in diffusion.parameters())
    return {
        "config": type(config).__name__ if config is not None else None,
        "dim": unet.get("dim") or unet.get("hidden_size"),
        "in_dim": unet.get("in_dim"),
        "precision": dtype_text(dtype) if dtype is not None else None,
        "params": params,
    }


def comfy_config_request(descriptor: dict) -> dict:
    """The core's recognise request for a loaded model's ComfyUI config (comfy/supported_models.py class
    name, unet_config width and input channels)."""
    return {"comfy_config": {"config_class": descriptor.get("config") or "", "dim": descriptor.get("dim"),
                             "in_channels": descriptor.get("in_dim")}}


def catalog_model_name(descriptor: dict, core=None):
    """The catalog entry name for a loaded model, or None when it cannot be told apart. The core decides
    (native/data/comfy_nodes.json model_configs)."""
    if core is None:
        from ..native import native_loader
        core = native_loader.core()
    answer = json.loads(core.recognise(json.dumps(comfy_config_request(descriptor))))
    return answer.get("model")


def vae_state_dict(vae) -> dict:
    """VAE -> its decoder weights as a name -> tensor dict (read-only use)."""
    if hasattr(vae, "get_sd"):
        return vae.get_sd()
    inner = getattr(vae, "first_stage_model", None)
    if inner is not None and hasattr(inner, "state_dict"):
        return inner.state_dict()
    raise ValueError("vae: expected a ComfyUI VAE (with get_sd() or first_stage_model)")


def image_from_channels_first(pixels):
    """[B,3,H,W] -> IMAGE [B,H,W,3]; video [B,3,T,H,W] -> [B*T,H,W,3] like ComfyUI's VAEDecode."""
    if pixels.dim() == 4:
        return pixels.movedim(1, -1)
    if pixels.dim() == 5:
        out = pixels.movedim(1, -1)
        return out.reshape(-1, out.shape[-3], out.shape[-2], out.shape[-1])
    raise ValueError(f"decoded pixels: expected 4-D or 5-D, got {list(pixels.shape)}")


def last_execution_error():
    """Text of the newest failed run in ComfyUI's history (exception type + message), or None."""
    try:
        from server import PromptServer
    except Exception:
        return None
    queue = getattr(getattr(PromptServer, "instance", None), "prompt_queue", None)
    history = getattr(queue, "history", None)
    if not history:
        return None
    for item in reversed(list(history.values())):
        for message in (item.get("status") or {}).get("messages", []) or []:
            if isinstance(message, (list, tuple)) and len(message) == 2 and message[0] == "execution_error":
                data = message[1] or {}
                return f"{data.get('exception_type', '')}: {data.get('exception_message', '')}".strip(": ")
    return None


def comfy_models_dir():
    """ComfyUI's models folder (so the planner can read exact sizes from file headers), or None."""
    try:
        import folder_paths
    except ImportError:
        return None
    return getattr(folder_paths, "models_dir", None)


def comfy_input_dir():
    """ComfyUI's input folder (so the planner reads the size of the images LoadImage nodes load from their
    headers), or None outside ComfyUI."""
    try:
        import folder_paths
        path = folder_paths.get_input_directory()
    except Exception:  # an old or patched folder_paths must not stop the plan
        return None
    return path if isinstance(path, str) and path else None


def comfy_model_folders():
    """ComfyUI's folder lists (folder_paths.folder_names_and_paths: "loras" -> every directory it searches,
    extra_model_paths.yaml's included), so files kept outside the models folder are read too; or None."""
    try:
        import folder_paths
    except ImportError:
        return None
    table = getattr(folder_paths, "folder_names_and_paths", None)
    if not isinstance(table, dict):
        return None
    out = {}
    for name, entry in table.items():
        paths = entry[0] if isinstance(entry, (tuple, list)) and entry else None
        if isinstance(name, str) and isinstance(paths, (list, tuple)):
            dirs = [p for p in paths if isinstance(p, str) and p]
            if dirs:
                out[name] = dirs
    return out or None


RUNTIMES = ("dynamic", "legacy")


def with_runtime(request: dict, runtime=None) -> dict:
    """The request with the live ComfyUI's loader and its knobs (comfy_runtime.request_fields: runtime,
    reserve_bytes, vram_headroom_bytes, ram_bytes), so a verdict is for the loader that will run; outside
    ComfyUI nothing is added and the core's default applies. The request's own fields win, and an explicit
    `runtime` (the browser's choice) wins over the detected one. With calibration on, the corrections
    learned from this card's runs ride along (calibration.request_fields), which the core applies."""
    out = {**comfy_runtime.request_fields(), **calibration.request_fields(), **request}
    if runtime is not None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime: expected one of {', '.join(RUNTIMES)}, got {runtime!r}")
        out["runtime"] = runtime
    return out


def plan_request(workflow: dict, budget_fields: dict, runtime=None) -> dict:
    request = with_runtime({"workflow": workflow, **budget_fields}, runtime)
    models_dir = comfy_models_dir()
    if models_dir:
        request["models_dir"] = models_dir
    folders = comfy_model_folders()
    if folders:
        request["model_folders"] = folders
    input_dir = comfy_input_dir()
    if input_dir:
        request["input_dir"] = input_dir
    return request
