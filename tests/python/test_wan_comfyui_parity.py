"""Native Wan decode against ComfyUI's own Wan VAE classes (comfy.ldm.wan.vae / vae2_2), loaded with
the same random state dict. Runs only when COMFYUI_PATH points at a ComfyUI source tree (einops must
be importable); skipped otherwise."""
import os
import sys

import pytest
import torch

import reference_wan_vae as ref

COMFY = os.environ.get("COMFYUI_PATH")
pytestmark = pytest.mark.skipif(not COMFY, reason="COMFYUI_PATH is not set")
ops = pytest.importorskip("_headroom_torch", reason="_headroom_torch is not built (HEADROOM_BUILD_DIR)")


def comfy_modules():
    if COMFY not in sys.path:
        sys.path.insert(0, COMFY)
    import comfy.cli_args

    comfy.cli_args.args.cpu = True  # before comfy.model_management is imported
    import comfy.model_management  # noqa: F401
    import comfy.ldm.wan.vae as v21
    import comfy.ldm.wan.vae2_2 as v22

    return v21, v22


def comfy_vae(family, sd, dim, z):
    v21, v22 = comfy_modules()
    cfg = dict(dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True])
    if family == "wan2.1":
        model = v21.WanVAE(dim=dim, z_dim=z, **cfg)
    else:
        model = v22.WanVAE(dim=dim, dec_dim=dim, z_dim=z, **cfg)
    decoder_keys = {k: v for k, v in sd.items() if k.startswith("decoder.") or k.startswith("conv2.")}
    result = model.load_state_dict(decoder_keys, strict=False)
    assert not result.unexpected_keys
    assert not [k for k in result.missing_keys if k.startswith("decoder.") or k.startswith("conv2.")]
    return model.eval()


@pytest.mark.parametrize("family,z", [("wan2.1", 4), ("wan2.2", 6)])
@pytest.mark.parametrize("t", [1, 2, 5])
def test_native_matches_comfyui(family, z, t):
    sd = ref.make_state_dict(family, dim=8, z_dim=z, seed=11)
    model = comfy_vae(family, sd, 8, z)
    lat = torch.randn(1, z, t, 5, 7, generator=torch.Generator().manual_seed(t))
    with torch.no_grad():
        raw = model.decode(lat).float()
    expect = ((raw + 1) / 2).clamp(0, 1).permute(0, 2, 3, 4, 1).reshape(-1, *raw.shape[3:], 3)
    image, _ = ops.decode(sd, lat, mode="full")
    assert image.shape == expect.shape
    span = (raw.max() - raw.min()).item()
    assert (image - expect).abs().max().item() * 2 < 1e-4 * span
    tiled, _ = ops.decode(sd, lat, mode="exact", tile_px=48 if family == "wan2.1" else 64)
    assert (tiled - expect).abs().max().item() * 2 < 1e-4 * span
