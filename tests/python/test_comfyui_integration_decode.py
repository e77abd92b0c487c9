"""VAE Decode (Headroom) on ComfyUI's own VAE objects, in-process (only with COMFYUI_PATH; extra import
paths for ComfyUI's dependencies in COMFYUI_PYTHONPATH). comfy.sd.VAE builds the real architecture
from a state dict's detection keys with random weights on the CPU; the node's output must match
ComfyUI's own decode of the same VAE."""
import os
import sys

import pytest
import torch

from conftest import load_pack

COMFY = os.environ.get("COMFYUI_PATH")
pytestmark = pytest.mark.skipif(not COMFY, reason="COMFYUI_PATH is not set")
pytest.importorskip("_headroom_torch", reason="_headroom_torch is not built (HEADROOM_BUILD_DIR)")
PACK = load_pack()

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture(scope="module")
def comfy_sd():
    for extra in reversed([COMFY] + [p for p in os.environ.get("COMFYUI_PYTHONPATH", "").split(os.pathsep) if p]):
        if extra not in sys.path:
            sys.path.insert(0, extra)
    import comfy.cli_args
    comfy.cli_args.args.cpu = True  # before comfy.model_management is imported (no CUDA here)
    import comfy.model_management  # noqa: F401
    import comfy.sd
    return comfy.sd


def comfy_vae(comfy_sd, detection_sd, seed):
    """ComfyUI builds the architecture from the detection key (its layers skip weight init), then gets
    well-scaled random weights: norms near 1/0, convs ~ N(0, 1/fan_in), so activations stay O(1)."""
    vae = comfy_sd.VAE(sd=detection_sd)
    g = torch.Generator().manual_seed(seed)
    filled = {}
    for name, t in vae.first_stage_model.state_dict().items():
        if not t.is_floating_point():
            filled[name] = t
        elif "norm" in name or name.endswith("gamma"):
            filled[name] = (1.0 if (name.endswith("weight") or name.endswith("gamma")) else 0.0) + 0.1 * torch.randn(t.shape, generator=g)
        elif name.endswith("weight") and t.dim() > 1:
            filled[name] = torch.randn(t.shape, generator=g) * (1.0 / t[0].numel()) ** 0.5
        else:
            filled[name] = 0.05 * torch.randn(t.shape, generator=g)
    vae.first_stage_model.load_state_dict({k: v.to(t.dtype) for (k, v), t in
                                           zip(filled.items(), vae.first_stage_model.state_dict().values())})
    return vae


def test_kl_vae_exact_and_blend_match_comfyui(comfy_sd):
    # Flux/SD3 AutoencoderKL: decoder.conv_in.weight with 16 latent channels; without the third encoder
    # downsample ComfyUI would build the 4x upscaler VAE instead (comfy/sd.py).
    vae = comfy_vae(comfy_sd, {"decoder.conv_in.weight": torch.zeros(512, 16, 3, 3),
                               "encoder.down.2.downsample.conv.weight": torch.zeros(512, 512, 3, 3)}, seed=5)
    z = torch.randn(1, 16, 6, 5, generator=torch.Generator().manual_seed(1))
    expected = vae.decode(z)
    node = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]()
    for mode in ("exact", "blend"):
        out = node.decode({"samples": z}, vae, mode=mode, budget="auto")
        image = out["result"][0]
        assert image.shape == expected.shape == (1, 48, 40, 3), mode
        assert (image - expected).abs().max().item() < 2e-3, mode
    # blend runs ComfyUI's own decoder per tile, so the report names it, not the native KL decoder.
    assert out["ui"]["text"][0].startswith("comfy VAE, blend decode, tile ")


def test_wan21_vae_matches_comfyui(comfy_sd):
    # Wan 2.1 VAE: decoder.middle.0.residual.0.gamma without the 2.2 upsample key (comfy/sd.py).
    vae = comfy_vae(comfy_sd, {"decoder.middle.0.residual.0.gamma": torch.ones(384, 1, 1, 1)}, seed=6)
    z = torch.randn(1, 16, 2, 4, 4, generator=torch.Generator().manual_seed(2))
    expected = vae.decode(z)
    expected = expected.reshape(-1, *expected.shape[-3:])
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]().decode({"samples": z}, vae, mode="auto", budget="auto")
    image = out["result"][0]
    assert image.shape == expected.shape == (5, 32, 32, 3)
    assert (image - expected).abs().max().item() < 2e-3
    assert out["ui"]["text"][0].startswith("wan2.1 VAE")
