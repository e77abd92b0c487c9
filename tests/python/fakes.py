"""Minimal stand-ins for ComfyUI objects and the native core, for tests only (never in the pack)."""
import json

import torch


def latent_image(batch=1, channels=16, h=8, w=8):
    return {"samples": torch.randn(batch, channels, h, w)}


def latent_video(batch=1, channels=16, t=3, h=6, w=6):
    return {"samples": torch.randn(batch, channels, t, h, w)}


class FakeVAE:
    """ComfyUI VAE surface the nodes use: get_sd(), decode(latent) -> [B,(T),H,W,3], upscale_ratio.
    decode is nearest-neighbour upsampling of the first three channels, so tiles can be checked."""

    def __init__(self, state_dict=None, upscale=8, video=False):
        self.sd = state_dict or {"decoder.conv_in.weight": torch.zeros(4, 16, 3, 3)}
        # ComfyUI's VAE.upscale_ratio: an int for image VAEs, (frames lambda, h, w) for video VAEs.
        self.upscale_ratio = (lambda a: max(0, a * 4 - 3), upscale, upscale) if video else upscale
        self.scale = upscale
        self.video = video
        self.decode_calls = []
        self.tiled_calls = []

    def get_sd(self):
        return self.sd

    def decode_tiled(self, samples, tile_x=None, tile_y=None, overlap=None, tile_t=None, overlap_t=None):
        """ComfyUI's VAE.decode_tiled signature (comfy/sd.py); records the tiles it was asked for."""
        self.tiled_calls.append({"tile_x": tile_x, "tile_y": tile_y, "overlap": overlap, "tile_t": tile_t,
                                 "overlap_t": overlap_t})
        return self.decode(samples)

    def decode(self, latent):
        self.decode_calls.append(tuple(latent.shape))
        x = latent[:, :3].repeat_interleave(self.scale, -1).repeat_interleave(self.scale, -2)
        if x.dim() == 5:  # causal video VAE: first latent frame -> 1 frame, each later one -> 4
            x = torch.cat([x[:, :, :1], x[:, :, 1:].repeat_interleave(4, 2)], 2)
        return x.movedim(1, -1)


# api::catalog()'s verdicts (test_verdict_spellings.py checks this copy against the real core).
VERDICTS = [{"id": "fits", "text": "fits", "runs": True, "fits": True, "sized": True},
            {"id": "tight", "text": "tight", "runs": True, "fits": False, "sized": True},
            {"id": "streams", "text": "streams", "runs": True, "fits": False, "sized": True},
            {"id": "does_not_fit", "text": "does not fit", "runs": False, "fits": False, "sized": True},
            {"id": "unknown", "text": "unknown", "runs": False, "fits": False, "sized": False}]


def set_verdict(answer, verdict_id):
    """Writes a verdict into a fake answer as the core does: the words and the id beside them."""
    answer["verdict"] = next(v["text"] for v in VERDICTS if v["id"] == verdict_id)
    answer["verdict_id"] = verdict_id
    return answer


class FakeCore:
    """Answers like the core library (JSON strings in and out), with canned results, and records calls."""

    class InputError(ValueError):
        pass

    def __init__(self, peak=20 * 2**30, changes=None, presets=None):
        self.peak = peak
        self.calls = []
        self.changes = changes if changes is not None else [
            {"description": "weight_dtype fp8_e4m3fn", "edits": [{"node_id": "1", "widget": "weight_dtype",
                                                                 "to": "fp8_e4m3fn"}],
             "new_peak_bytes": 11 * 2**30}]
        self.presets = presets or [{"name": "fp8-weights", "title": "fp8 weights"}]
        self.recognised = None  # the model recognise() answers

    def _result(self, req):
        budget = req.get("vram_bytes")
        out = {"peak_bytes": self.peak, "peak_stage": "sample",
               "stages": [{"name": "text_encode", "peak_bytes": 9 * 2**30},
                          {"name": "sample", "peak_bytes": self.peak},
                          {"name": "decode", "peak_bytes": 6 * 2**30}]}
        workflow = req.get("workflow")
        if isinstance(workflow, dict):  # what the core read of the workload, whatever the budget
            out["job"] = {"class_types": sorted(str(n.get("class_type")) for n in workflow.values()
                                                if isinstance(n, dict))}
            out["workflow"] = {"format": "ui" if "nodes" in workflow else "api"}
        if budget is not None:
            out["budget_bytes"] = budget
            set_verdict(out, "fits" if self.peak <= budget else "does_not_fit")
            out["changes"] = [] if self.peak <= budget else self.changes
        return out

    def catalog(self):
        # Not recorded in `calls`: the nodes read the verdicts' flags from it after each estimate, and the
        # tests look at the last estimator call.
        return json.dumps({"models": [{"name": "flux1-dev", "aliases": ["flux dev"]}], "presets": self.presets,
                           "verdicts": VERDICTS})

    def recognise(self, text):
        req = json.loads(text)
        self.calls.append(("recognise", req))
        return json.dumps({"from": "comfy_config" if "comfy_config" in req else "tensors", "model": self.recognised})

    def plan(self, text):
        req = json.loads(text)
        self.calls.append(("plan", req))
        if "workflow" not in req:
            raise self.InputError("workflow: missing")
        return json.dumps(self._result(req))

    def estimate(self, text):
        req = json.loads(text)
        self.calls.append(("estimate", req))
        result = self._result(req)
        if str(req.get("precision", "")).startswith("fp8"):
            result = self._result({**req})
            result["peak_bytes"] = self.peak // 2
            if "budget_bytes" in result:
                set_verdict(result, "fits" if result["peak_bytes"] <= result["budget_bytes"] else "does_not_fit")
        return json.dumps(result)

    def apply_preset(self, text):
        req = json.loads(text)
        self.calls.append(("apply_preset", req))
        return json.dumps({"workflow": req["workflow"], "before": {"peak_bytes": self.peak},
                           "after": {"peak_bytes": self.peak // 2},
                           "changes": [{"node_id": "1", "widget": "weight_dtype", "from": "default",
                                        "to": "fp8_e4m3fn"}]})

    def explain(self, text):
        self.calls.append(("explain", text))
        return json.dumps({"recognised": "out of memory" in text.lower(), "diagnosis": {"id": "out_of_memory", "text": "the model filled the card"},
                           "fixes": [{"text": "use fp8 weights"}]})

    def inspect(self, paths):
        self.calls.append(("inspect", list(paths)))
        return json.dumps([{"path": p, "model": "flux1-dev", "dtype": "bf16"} for p in paths])
