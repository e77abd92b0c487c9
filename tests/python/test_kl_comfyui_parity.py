"""Native KL decode against ComfyUI's own decoder (comfy.ldm.modules.diffusionmodules.model.Decoder,
the class ComfyUI's AutoencoderKL builds for Flux/SD VAEs), loaded with the same random state dict.
Runs only when COMFYUI_PATH points at a ComfyUI source tree (einops importable); skipped otherwise."""
import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_kl_vae as ref  # noqa: E402

COMFY = os.environ.get("COMFYUI_PATH")
pytestmark = pytest.mark.skipif(not COMFY, reason="COMFYUI_PATH is not set")
ht = pytest.importorskip("_headroom_torch", reason="_headroom_torch is not built (HEADROOM_BUILD_DIR)")


def comfy_decoder(sd, z_channels, ch, ch_mult, num_res_blocks):
    if COMFY not in sys.path:
        sys.path.insert(0, COMFY)
    import comfy.cli_args

    comfy.cli_args.args.cpu = True  # before comfy.model_management is imported
    import comfy.model_management  # noqa: F401
    from comfy.ldm.modules.diffusionmodules.model import Decoder

    dec = Decoder(ch=ch, out_ch=3, ch_mult=ch_mult, num_res_blocks=num_res_blocks, attn_resolutions=[],
                  in_channels=3, resolution=256, z_channels=z_channels)
    keys = {k[len("decoder."):]: v for k, v in sd.items() if k.startswith("decoder.")}
    result = dec.load_state_dict(keys, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    return dec.eval()


@pytest.mark.parametrize("z_channels,widths,blocks", [(16, (32, 64, 64), 2), (4, (32, 32, 64, 64), 3)])
def test_native_matches_comfyui_decoder(z_channels, widths, blocks):
    model = ref.random_vae(z_channels=z_channels, widths=widths, blocks=blocks, post_quant=False, seed=21)
    sd = ref.state_dict_of(model)
    dec = comfy_decoder(sd, z_channels, widths[0], tuple(w // widths[0] for w in widths), blocks - 1)
    z = torch.randn(2, z_channels, 9, 11, generator=torch.Generator().manual_seed(22))
    with torch.no_grad():
        raw = dec(z).float()
    expect = ((raw + 1) / 2).clamp(0, 1).permute(0, 2, 3, 1)
    full, _ = ht.decode(sd, z, mode="full")
    exact, _ = ht.decode(sd, z, mode="exact", tile_px=4 * (1 << (len(widths) - 1)))
    assert full.shape == expect.shape
    assert (full - expect).abs().max().item() < 1e-4
    assert (exact - expect).abs().max().item() < 1e-4
