"""HeadroomLoadDiffusionModel: ComfyUI's UNETLoader with weight_dtype "auto".

auto keeps 16-bit weights when the planned resolution's run fits the budget with them, and picks fp8
(e4m3fn) when it would not; the estimate comes from the native core, the reason goes to the output."""
import json

from ..comfyui import budget as budget_mod
from ..comfyui import comfy_adapters
from ..native import native_loader
from ..report import report_format

WEIGHT_DTYPES = ["auto", "default", "fp8_e4m3fn", "fp8_e4m3fn_fast", "fp8_e5m2"]
FP8 = "fp8_e4m3fn"


def _diffusion_models():
    try:
        import folder_paths
    except ImportError:
        return []
    return folder_paths.get_filename_list("diffusion_models")


def _inspected(path: str) -> dict:
    result = json.loads(native_loader.core().inspect([path]))
    entries = result if isinstance(result, list) else result.get("files", [result])
    return entries[0] if entries else {}


def _model_name(info: dict):
    for key in ("model", "recognised_model", "recognized_model", "catalog_model", "name"):
        value = info.get(key)
        if isinstance(value, dict):
            value = value.get("name")
        if value:
            return value
    return None


def _is_fp8(info: dict) -> bool:
    text = json.dumps({k: info.get(k) for k in ("precision", "dtype", "dtypes")}).lower()
    return "f8" in text or "fp8" in text or "float8" in text


def choose_dtype(path, width, height, frames, batch, budget="auto"):
    """("default" | "fp8_e4m3fn", why). Raises NativeUnavailable / ValueError from the core."""
    info = _inspected(path)
    if info.get("error"):  # the inspector reports unreadable or malformed files per path
        raise ValueError(f"unet_name: {info['error']}")
    name = _model_name(info)
    if name is None:
        return "default", "auto: the file is not a model Headroom knows, so ComfyUI's default dtype is kept"
    if _is_fp8(info):
        return "default", f"auto: {name} is stored in fp8 already; kept as is"
    fields = budget_mod.resolve(budget)
    if not fields:
        return "default", f"auto: no GPU budget ({budget_mod.describe(fields)}); kept 16-bit weights"
    # The live loader's fields: under dynamic VRAM 16-bit weights that stream still run.
    job = comfy_adapters.with_runtime({"model": name, "width": width, "height": height, "frames": frames,
                                       "batch": batch, **fields})
    stored = str(info.get("precision") or "")
    wide = native_loader.call_json("estimate", {**job, "precision": stored if stored in ("bf16", "fp16", "fp32") else "bf16"})
    if not report_format.is_over_budget(wide, fields):
        return "default", (f"auto: 16-bit weights fit: peak {report_format.gib(wide.get('peak_bytes'))} within "
                           f"{budget_mod.describe(fields)} at {width}x{height}x{frames}, batch {batch}")
    narrow = native_loader.call_json("estimate", {**job, "precision": FP8})
    # The core's words for both (its verdicts), as the Preflight report and the panel say them.
    verdict = report_format.verdict_text(narrow, fields)
    if report_format.is_over_budget(narrow, fields):
        verdict += "; see the Preflight plan"
    return FP8, (f"auto: 16-bit weights would peak at {report_format.gib(wide.get('peak_bytes'))} "
                 f"({wide.get('peak_stage', '?')}): {report_format.verdict_text(wide, fields)} on "
                 f"{budget_mod.describe(fields)} at {width}x{height}x{frames}, batch {batch}; fp8 weights peak at "
                 f"{report_format.gib(narrow.get('peak_bytes'))}: {verdict}")


def fp8_supported() -> bool:
    """fp8 storage needs torch >= 2.1 (torch.float8_e4m3fn)."""
    import torch
    return hasattr(torch, "float8_e4m3fn") and hasattr(torch, "float8_e5m2")


def model_options(weight_dtype: str) -> dict:
    """UNETLoader's mapping of the widget to ComfyUI's model_options."""
    import torch
    if weight_dtype == "fp8_e4m3fn":
        return {"dtype": torch.float8_e4m3fn}
    if weight_dtype == "fp8_e4m3fn_fast":
        return {"dtype": torch.float8_e4m3fn, "fp8_optimizations": True}
    if weight_dtype == "fp8_e5m2":
        return {"dtype": torch.float8_e5m2}
    return {}


class HeadroomLoadDiffusionModel:
    CATEGORY = "Headroom"
    FUNCTION = "load"
    RETURN_TYPES = ("MODEL", "STRING")
    RETURN_NAMES = ("model", "why")
    DESCRIPTION = ("Load Diffusion Model with weight_dtype 'auto': fp8 only when 16-bit weights would not "
                   "leave room for the planned resolution's activations.")

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "unet_name": (_diffusion_models(),),
                "weight_dtype": (WEIGHT_DTYPES, {"default": "auto"}),
                "width": ("INT", {"default": 1024, "min": 16, "max": 16384, "step": 16,
                                  "tooltip": "Planned output width (for the auto choice)."}),
                "height": ("INT", {"default": 1024, "min": 16, "max": 16384, "step": 16}),
                "frames": ("INT", {"default": 1, "min": 1, "max": 1024, "step": 1,
                                   "tooltip": "Planned video frames (1 for images)."}),
                "batch": ("INT", {"default": 1, "min": 1, "max": 64}),
                "budget": ("STRING", {"default": "auto"}),
            }
        }

    def load(self, unet_name, weight_dtype="auto", width=1024, height=1024, frames=1, batch=1, budget="auto"):
        import comfy.sd
        import folder_paths
        path = folder_paths.get_full_path_or_raise("diffusion_models", unet_name)
        why = f"weight_dtype {weight_dtype} as chosen"
        if weight_dtype == "auto":
            try:
                weight_dtype, why = choose_dtype(path, width, height, frames, batch, budget)
            except native_loader.NativeUnavailable as e:
                weight_dtype, why = "default", f"auto fell back to ComfyUI's default dtype. {e}"
            except (ValueError, RuntimeError) as e:  # the core could not judge this file
                weight_dtype, why = "default", f"auto kept ComfyUI's default dtype: {e}"
        if weight_dtype.startswith("fp8") and not fp8_supported():
            import torch
            why += f"; but torch {torch.__version__} has no fp8 dtypes, so ComfyUI's default dtype is used"
            weight_dtype = "default"
        model = comfy.sd.load_diffusion_model(path, model_options=model_options(weight_dtype))
        return {"ui": {"text": [why]}, "result": (model, why)}
