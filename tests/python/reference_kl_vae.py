"""An independent plain-PyTorch AutoencoderKL decoder (Flux / SD3 / SDXL / SD1.5 VAEs), written from
the published architecture (Rombach et al., "High-Resolution Image Synthesis with Latent Diffusion
Models", ldm Decoder: conv_in -> mid [resnet, attention, resnet] -> up levels [resnets, nearest x2 +
conv] -> GroupNorm(32, eps 1e-6) -> SiLU -> conv_out), with the state-dict names ComfyUI uses.

It is the oracle of the native decoder's tests and the "PyTorch eager" side of the benchmark, and
also builds random state dicts of any width for them.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

GROUPS = 32
EPS = 1e-6


def _norm(c):
    return nn.GroupNorm(GROUPS, c, eps=EPS, affine=True)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = _norm(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2 = _norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        skip = self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x
        return skip + h


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = _norm(c)
        self.q = nn.Conv2d(c, c, 1)
        self.k = nn.Conv2d(c, c, 1)
        self.v = nn.Conv2d(c, c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        n = self.norm(x)
        q = self.q(n).reshape(b, c, h * w).permute(0, 2, 1)
        k = self.k(n).reshape(b, c, h * w)
        v = self.v(n).reshape(b, c, h * w)
        att = torch.softmax(torch.bmm(q, k) / math.sqrt(c), dim=-1)  # [b, hw(query), hw(key)]
        out = torch.bmm(v, att.permute(0, 2, 1)).reshape(b, c, h, w)
        return x + self.proj_out(out)


class Upsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Level(nn.Module):
    def __init__(self, cin, cout, blocks, upsample):
        super().__init__()
        self.block = nn.ModuleList()
        for _ in range(blocks):
            self.block.append(ResnetBlock(cin, cout))
            cin = cout
        if upsample:
            self.upsample = Upsample(cout)


class Mid(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block_1 = ResnetBlock(c, c)
        self.attn_1 = AttnBlock(c)
        self.block_2 = ResnetBlock(c, c)


class Decoder(nn.Module):
    def __init__(self, z_channels, widths, blocks):
        super().__init__()
        block_in = widths[-1]
        self.conv_in = nn.Conv2d(z_channels, block_in, 3, padding=1)
        self.mid = Mid(block_in)
        levels = [None] * len(widths)
        c = block_in
        for i in reversed(range(len(widths))):
            levels[i] = Level(c, widths[i], blocks, upsample=i != 0)
            c = widths[i]
        self.up = nn.ModuleList(levels)
        self.norm_out = _norm(c)
        self.conv_out = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, z):
        h = self.conv_in(z)
        h = self.mid.block_2(self.mid.attn_1(self.mid.block_1(h)))
        for i in reversed(range(len(self.up))):
            for b in self.up[i].block:
                h = b(h)
            if hasattr(self.up[i], "upsample"):
                h = self.up[i].upsample(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class KLDecoderOnly(nn.Module):
    """post_quant_conv (optional, SD/SDXL have it, Flux does not) + decoder."""

    def __init__(self, z_channels=16, widths=(128, 256, 512, 512), blocks=3, post_quant=False):
        super().__init__()
        if post_quant:
            self.post_quant_conv = nn.Conv2d(z_channels, z_channels, 1)
        self.decoder = Decoder(z_channels, list(widths), blocks)

    def forward(self, z):
        if hasattr(self, "post_quant_conv"):
            z = self.post_quant_conv(z)
        return self.decoder(z)


def random_vae(z_channels=16, widths=(32, 64, 64), blocks=2, post_quant=False, seed=0):
    """A decoder with random but well-scaled weights (conv weights ~ He init, norm affine near 1/0),
    so activations stay O(1) through the net like a trained VAE's and errors are meaningful."""
    g = torch.Generator().manual_seed(seed)
    m = KLDecoderOnly(z_channels, widths, blocks, post_quant)
    init_well_scaled(m, g)
    return m.eval()


def init_well_scaled(model, g):
    """Conv weights ~ He init, norm affine near 1/0, small biases, drawn from generator `g` in parameter order."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("weight"):
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) * math.sqrt(1.0 / fan_in))
            else:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))


def state_dict_of(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def to_image(x):
    """ComfyUI's VAE process_output + movedim: float32 [B, H, W, 3] in [0, 1]."""
    return torch.clamp((x.float() + 1.0) / 2.0, 0.0, 1.0).permute(0, 2, 3, 1).contiguous()


# --- minimal .safetensors I/O for the tests (the `safetensors` package is not installed here) ---

_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}
_BY_NAME = {v: k for k, v in _DTYPES.items()}


def save_safetensors(path, tensors, metadata=None):
    import json
    import struct

    header, blobs, off = {}, [], 0
    for k, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[k] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    import json
    import struct

    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for k, e in header.items():
        if k == "__metadata__":
            continue
        b, en = e["data_offsets"]
        buf = bytearray(data[8 + n + b:8 + n + en])
        dt = _BY_NAME[e["dtype"]]
        out[k] = torch.frombuffer(buf, dtype=torch.uint8).view(dt).reshape(e["shape"]) if buf else torch.zeros(e["shape"], dtype=dt)
    return out
