"""HeadroomPreflight: sits on the LATENT before the sampler, predicts the run's peak VRAM per stage and
shows the verdict in the node body; passes the latent through unchanged."""
from ..comfyui import budget as budget_mod
from ..comfyui import comfy_adapters
from ..native import native_loader
from ..report import report_format

ACTIONS = ["warn", "stop", "apply fix"]


def estimate_for(prompt, model, samples, fields) -> dict:
    """Whole-prompt plan when ComfyUI hands us the prompt; else the MODEL + latent as one job."""
    if isinstance(prompt, dict) and prompt:
        return native_loader.call_json("plan", comfy_adapters.plan_request(prompt, fields))
    if model is None:
        raise ValueError("model: connect the MODEL (or run inside ComfyUI, which passes the whole prompt)")
    descriptor = comfy_adapters.model_descriptor(model)
    name = comfy_adapters.catalog_model_name(descriptor)
    if name is None:
        raise ValueError(f"model: not in Headroom's catalog ({descriptor.get('config')}, dim {descriptor.get('dim')})")
    request = comfy_adapters.with_runtime({"model": name, **comfy_adapters.latent_geometry(samples), **fields})
    if descriptor.get("precision"):
        request["precision"] = descriptor["precision"]
    return native_loader.call_json("estimate", request)


class HeadroomPreflight:
    CATEGORY = "Headroom"
    FUNCTION = "run"
    RETURN_TYPES = ("LATENT", "STRING")
    RETURN_NAMES = ("samples", "report")
    DESCRIPTION = ("Predicts the peak VRAM of this run per stage (text encode, sampling, decode) against the "
                   "budget and shows the verdict here. Warn, stop the run, or apply the cheapest fix "
                   "Headroom can make itself (at queue time).")

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "samples": ("LATENT", {"tooltip": "The latent going to the sampler; passed through unchanged."}),
                "budget": ("STRING", {"default": "auto", "tooltip": "auto = free VRAM as ComfyUI counts it; "
                                      "or a number of GB; or a GPU name such as 'RTX 4090 24GB'."}),
                "action": (ACTIONS, {"default": "warn", "tooltip": "warn: report only; stop: fail before "
                                     "sampling when over budget; apply fix: let Headroom apply the cheapest "
                                     "fix when the prompt is queued."}),
            },
            "optional": {
                "model": ("MODEL",),
                "clip": ("CLIP",),
                "vae": ("VAE",),
            },
            "hidden": {"prompt": "PROMPT", "extra_pnginfo": "EXTRA_PNGINFO", "unique_id": "UNIQUE_ID"},
        }

    @classmethod
    def IS_CHANGED(cls, **_inputs):
        # A constant: ComfyUI then takes the fingerprint the queue-time handler put in the prompt
        # (node["is_changed"], prompt_handler._stamp_in_background), which covers the whole prompt.
        return ""

    def run(self, samples, budget="auto", action="warn", model=None, clip=None, vae=None,
            prompt=None, extra_pnginfo=None, unique_id=None):
        comfy_adapters.latent_shape(samples)  # validates the input before anything else
        try:
            fields = budget_mod.resolve(budget)
        except ValueError as e:
            return self._done(samples, f"Headroom preflight: {e}")
        try:
            result = estimate_for(prompt, model, samples, fields)
        except native_loader.NativeUnavailable as e:
            # Without the core there is nothing to judge; never block the user's run for that.
            return self._done(samples, f"Headroom preflight skipped. {e}")
        except (ValueError, RuntimeError) as e:  # the core's InputError / HeadroomError
            # Like a missing build: an estimate that fails is no reason to stop the user's run.
            return self._done(samples, f"Headroom preflight could not estimate this workflow: {e}")
        text = report_format.preflight_report(result, fields, budget_mod.describe(fields))
        applied = ((extra_pnginfo or {}).get("headroom") or {}).get("applied") if isinstance(extra_pnginfo, dict) else None
        if applied:
            titles = report_format.node_titles(prompt)
            text += "\nApplied at queue time: " + "; ".join(report_format.change_text(c, titles) for c in applied)
        if report_format.is_over_budget(result, fields) and action == "stop":
            raise RuntimeError("Headroom preflight stopped the run before sampling:\n" + text)
        return self._done(samples, text)

    @staticmethod
    def _done(samples, text):
        return {"ui": {"text": [text]}, "result": (samples, text)}
