"""An independent plain-PyTorch FLUX.2 VAE decode, the oracle of test_flux2_decode.py.

Written from the published layout (black-forest-labs/flux2, src/flux2/autoencoder.py, AutoEncoder):
ComfyUI's FLUX.2 LATENT [B, 4C, h, w] (C = 32) is first de-normalised per packed channel with the
latent BatchNorm's running statistics (affine=False, eps 1e-4: z * sqrt(var + eps) + mean), THEN
unpatchified 2x2 (packed channel c*4 + pi*2 + pj -> pixel (2i + pi, 2j + pj) of channel c, written
here with view/permute, not pixel_shuffle, so it does not share the native code's operation), then run
through the AutoencoderKL decoder, whose first layer is post_quant_conv (1x1, C -> C).

State dicts in both layouts a FLUX.2 VAE reaches Headroom in:
  - Black Forest Labs' file (flux2-vae.safetensors): 'decoder.post_quant_conv.*', 'bn.running_mean',
    'bn.running_var', 'bn.num_batches_tracked', 'decoder.*' (and 'encoder.*', ignored by the decoder);
  - ComfyUI's VAE.get_sd() after loading it (comfy/sd.py renames 'decoder.post_quant_conv.' to
    'post_quant_conv.'): 'post_quant_conv.*' at the top level, the same 'bn.*' and 'decoder.*'.
"""

import torch
from torch import nn

import reference_kl_vae as kl

PATCH = 2
BN_EPS = 1e-4


def unpatchify(z):
    """[B, 4C, h, w] -> [B, C, 2h, 2w], BFL's "... (c pi pj) i j -> ... c (i pi) (j pj)"."""
    b, n, h, w = z.shape
    c = n // (PATCH * PATCH)
    return z.reshape(b, c, PATCH, PATCH, h, w).permute(0, 1, 4, 2, 5, 3).reshape(b, c, h * PATCH, w * PATCH)


def patchify(x):
    """The inverse (BFL's encode side): [B, C, H, W] -> [B, 4C, H/2, W/2]."""
    b, c, hh, ww = x.shape
    h, w = hh // PATCH, ww // PATCH
    return x.reshape(b, c, h, PATCH, w, PATCH).permute(0, 1, 3, 5, 2, 4).reshape(b, c * PATCH * PATCH, h, w)


class Flux2DecoderOnly(nn.Module):
    """bn statistics + post_quant_conv + the KL decoder, decoding ComfyUI's packed FLUX.2 latent."""

    def __init__(self, z_channels=32, widths=(128, 256, 512, 512), blocks=3):
        super().__init__()
        n = z_channels * PATCH * PATCH
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))
        self.post_quant_conv = nn.Conv2d(z_channels, z_channels, 1)
        self.decoder = kl.Decoder(z_channels, list(widths), blocks)

    def denormalize(self, z):
        n = self.running_mean.numel()
        return z * torch.sqrt(self.running_var.view(1, n, 1, 1) + BN_EPS) + self.running_mean.view(1, n, 1, 1)

    def forward(self, z):
        return self.decoder(self.post_quant_conv(unpatchify(self.denormalize(z))))


def random_flux2_vae(z_channels=32, widths=(32, 64, 64), blocks=2, seed=0):
    """Random, well-scaled weights (as reference_kl_vae.random_vae) and BatchNorm statistics far from the
    identity (means ~ N(0, 0.5^2), variances in [0.3, 3]), so a wrong front end shows in the image."""
    g = torch.Generator().manual_seed(seed)
    m = Flux2DecoderOnly(z_channels, widths, blocks)
    kl.init_well_scaled(m, g)
    with torch.no_grad():
        m.running_mean.copy_(0.5 * torch.randn(m.running_mean.shape, generator=g))
        m.running_var.copy_(0.3 + 2.7 * torch.rand(m.running_var.shape, generator=g))
    return m.eval()


def _bn(model):
    return {"bn.running_mean": model.running_mean.detach().clone(),
            "bn.running_var": model.running_var.detach().clone(),
            "bn.num_batches_tracked": torch.tensor(1000, dtype=torch.int64)}


def _decoder(model):
    return {f"decoder.{k}": v.detach().clone() for k, v in model.decoder.state_dict().items()}


def bfl_state_dict(model):
    """Black Forest Labs' key layout: post_quant_conv inside the decoder."""
    pq = {f"decoder.post_quant_conv.{k}": v.detach().clone() for k, v in model.post_quant_conv.state_dict().items()}
    return {**_decoder(model), **pq, **_bn(model)}


def comfy_state_dict(model):
    """ComfyUI's VAE state dict: post_quant_conv at the top level."""
    pq = {f"post_quant_conv.{k}": v.detach().clone() for k, v in model.post_quant_conv.state_dict().items()}
    return {**_decoder(model), **pq, **_bn(model)}


def decode_image(model, z):
    """ComfyUI's IMAGE of the reference decode: float32 [B, H, W, 3] in [0, 1]."""
    with torch.no_grad():
        return kl.to_image(model(z))


def save_safetensors(path, tensors):
    """reference_kl_vae.save_safetensors, also for 0-dimensional tensors (the file's
    'bn.num_batches_tracked' is a scalar int64)."""
    import json
    import struct

    header, blobs, off = {}, [], 0
    for k, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[k] = {"dtype": kl._DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
