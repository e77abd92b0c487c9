"""Independent plain-PyTorch reference of the Wan 2.1 / 2.2 VAE decoders, used by the tests.

Written from the architecture description (docs/facts and the released state-dict names), not from
the native code: where the native decoder streams one latent frame at a time with a causal cache,
this reference runs every layer over the WHOLE clip at once, with explicit left zero padding in
time. The two formulations agree only if the cache handling is right, which is the point.

Also builds random state dicts with the released key names (reduced widths for tests) and a
ComfyUI-style spatial tiling baseline (tiles decoded independently, feathered linear blend).
"""
import math
import re

import torch
import torch.nn.functional as F


# ---------------------------------------------------------------------------------------------
# architecture read from the state dict


def _indices(sd, prefix):
    """Sorted integer children of `prefix` (e.g. 'decoder.upsamples.' -> [0, 1, ...])."""
    pat = re.compile(re.escape(prefix) + r"(\d+)\.")
    return sorted({int(m.group(1)) for k in sd for m in [pat.match(k)] if m})


def family_of(sd):
    if "decoder.upsamples.0.upsamples.0.residual.2.weight" in sd:
        return "wan2.2"
    if "decoder.middle.0.residual.0.gamma" in sd:
        return "wan2.1"
    raise ValueError("not a Wan VAE state dict")


# ---------------------------------------------------------------------------------------------
# layers over the whole clip: x is [B, C, T, H, W]


def causal_conv(x, w, b):
    """Causal 3-D conv: time padded with kt-1 zero frames on the left, space padded symmetrically."""
    kt, kh, kw = w.shape[2:]
    x = F.pad(x, (kw // 2, kw // 2, kh // 2, kh // 2, kt - 1, 0))
    return F.conv3d(x, w, b)


def rms_norm(x, gamma):
    # per pixel over channels: F.normalize(x, dim=1) * sqrt(C) * gamma
    c = x.shape[1]
    return F.normalize(x, dim=1) * math.sqrt(c) * gamma.reshape(1, c, *([1] * (x.dim() - 2)))


def per_frame(x, fn):
    b, c, t, h, w = x.shape
    y = fn(x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w))
    return y.reshape(b, t, *y.shape[1:]).permute(0, 2, 1, 3, 4)


def residual_block(sd, p, x):
    h = F.silu(rms_norm(x, sd[p + "residual.0.gamma"]))
    h = causal_conv(h, sd[p + "residual.2.weight"], sd[p + "residual.2.bias"])
    h = F.silu(rms_norm(h, sd[p + "residual.3.gamma"]))
    h = causal_conv(h, sd[p + "residual.6.weight"], sd[p + "residual.6.bias"])
    if p + "shortcut.weight" in sd:
        x = causal_conv(x, sd[p + "shortcut.weight"], sd[p + "shortcut.bias"])
    return x + h


def attention_block(sd, p, x):
    def attend(f):  # f: [N, C, H, W], single head over the H*W positions of one frame
        n, c, hh, ww = f.shape
        g = rms_norm(f, sd[p + "norm.gamma"])
        qkv = F.conv2d(g, sd[p + "to_qkv.weight"], sd[p + "to_qkv.bias"])
        q, k, v = (t.reshape(n, c, hh * ww).transpose(1, 2) for t in qkv.chunk(3, dim=1))
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(c), dim=-1) @ v
        a = a.transpose(1, 2).reshape(n, c, hh, ww)
        return F.conv2d(a, sd[p + "proj.weight"], sd[p + "proj.bias"])

    return x + per_frame(x, attend)


def time_upsample(sd, p, x):
    """Frame 0 passes through; frames 1.. go through a causal (3,1,1) conv giving 2 frames each."""
    first, rest = x[:, :, :1], x[:, :, 1:]
    if rest.shape[2] == 0:
        return first
    y = causal_conv(rest, sd[p + "time_conv.weight"], sd[p + "time_conv.bias"])
    b, c2, t, h, w = y.shape
    c = c2 // 2
    # channels [0, c) give the first sub-frame, [c, 2c) the second
    y = y.reshape(b, 2, c, t, h, w).permute(0, 2, 3, 1, 4, 5).reshape(b, c, 2 * t, h, w)
    return torch.cat([first, y], dim=2)


def resample(sd, p, x):
    if p + "time_conv.weight" in sd:
        x = time_upsample(sd, p, x)

    def up(f):
        f = f.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)  # nearest 2x
        return F.conv2d(f, sd[p + "resample.1.weight"], sd[p + "resample.1.bias"], padding=1)

    return per_frame(x, up)


def dup_up(x, out_ch, factor_t, factor_s):
    """Wan 2.2 shortcut: repeat channels, then spread them over (time, y, x) sub-positions."""
    b, c, t, h, w = x.shape
    factor = factor_t * factor_s * factor_s
    x = x.repeat_interleave(out_ch * factor // c, dim=1)
    x = x.reshape(b, out_ch, factor_t, factor_s, factor_s, t, h, w)
    x = x.permute(0, 1, 5, 2, 6, 3, 7, 4).reshape(b, out_ch, t * factor_t, h * factor_s, w * factor_s)
    # the first latent frame yields one frame, so its first sub-frame is dropped
    return x[:, :, factor_t - 1:]


def decode_video(sd, z):
    """z: [B, C, T, h, w] -> decoder output [B, 3, 4T-3, H, W] (before clamp), all on z's device/dtype."""
    fam = family_of(sd)
    x = causal_conv(z, sd["conv2.weight"], sd["conv2.bias"])
    x = causal_conv(x, sd["decoder.conv1.weight"], sd["decoder.conv1.bias"])
    x = residual_block(sd, "decoder.middle.0.", x)
    x = attention_block(sd, "decoder.middle.1.", x)
    x = residual_block(sd, "decoder.middle.2.", x)
    if fam == "wan2.1":
        for i in _indices(sd, "decoder.upsamples."):
            p = f"decoder.upsamples.{i}."
            x = residual_block(sd, p, x) if p + "residual.0.gamma" in sd else resample(sd, p, x)
    else:
        for i in _indices(sd, "decoder.upsamples."):
            p = f"decoder.upsamples.{i}.upsamples."
            x_in = x
            has_up = False
            for j in _indices(sd, p):
                q = f"{p}{j}."
                if q + "residual.0.gamma" in sd:
                    x = residual_block(sd, q, x)
                else:
                    has_up = True
                    x = resample(sd, q, x)
            if has_up:
                ft = 2 if any(k.startswith(p) and k.endswith("time_conv.weight") for k in sd) else 1
                x = x + dup_up(x_in, x.shape[1], ft, 2)
    x = F.silu(rms_norm(x, sd["decoder.head.0.gamma"]))
    x = causal_conv(x, sd["decoder.head.2.weight"], sd["decoder.head.2.bias"])
    if x.shape[1] == 12:  # 2x2 unpatchify: channel = c*4 + dx*2 + dy
        b, _, t, h, w = x.shape
        x = x.reshape(b, 3, 2, 2, t, h, w).permute(0, 1, 4, 5, 3, 6, 2).reshape(b, 3, t, h * 2, w * 2)
    return x


def to_image(x):
    """[B, 3, F, H, W] -> ComfyUI IMAGE [B*F, H, W, 3] float32 in [0, 1]."""
    b, c, f, h, w = x.shape
    return ((x.float() + 1) / 2).clamp(0, 1).permute(0, 2, 3, 4, 1).reshape(b * f, h, w, c).cpu()


def decode_image(sd, z):
    return to_image(decode_video(sd, z))


# ---------------------------------------------------------------------------------------------
# random state dicts with the released key names


def _res(sd, p, cin, cout, g, kt=3):
    sd[p + "residual.0.gamma"] = 1 + 0.1 * torch.randn(cin, 1, 1, 1, generator=g)
    sd[p + "residual.2.weight"] = torch.randn(cout, cin, kt, 3, 3, generator=g) / math.sqrt(cin * kt * 9)
    sd[p + "residual.2.bias"] = 0.05 * torch.randn(cout, generator=g)
    sd[p + "residual.3.gamma"] = 1 + 0.1 * torch.randn(cout, 1, 1, 1, generator=g)
    sd[p + "residual.6.weight"] = torch.randn(cout, cout, kt, 3, 3, generator=g) / math.sqrt(cout * kt * 9)
    sd[p + "residual.6.bias"] = 0.05 * torch.randn(cout, generator=g)
    if cin != cout:
        sd[p + "shortcut.weight"] = torch.randn(cout, cin, 1, 1, 1, generator=g) / math.sqrt(cin)
        sd[p + "shortcut.bias"] = 0.05 * torch.randn(cout, generator=g)


def _resample(sd, p, c, cout, temporal, g):
    sd[p + "resample.1.weight"] = torch.randn(cout, c, 3, 3, generator=g) / math.sqrt(c * 9)
    sd[p + "resample.1.bias"] = 0.05 * torch.randn(cout, generator=g)
    if temporal:
        # near-identity plus noise so later frames stay in range, like a trained VAE's
        w = torch.randn(2 * c, c, 3, 1, 1, generator=g) / math.sqrt(3 * c)
        sd[p + "time_conv.weight"] = w
        sd[p + "time_conv.bias"] = 0.05 * torch.randn(2 * c, generator=g)


def _attn(sd, p, c, g):
    sd[p + "norm.gamma"] = 1 + 0.1 * torch.randn(c, 1, 1, generator=g)
    sd[p + "to_qkv.weight"] = torch.randn(3 * c, c, 1, 1, generator=g) / math.sqrt(c)
    sd[p + "to_qkv.bias"] = 0.05 * torch.randn(3 * c, generator=g)
    sd[p + "proj.weight"] = torch.randn(c, c, 1, 1, generator=g) / math.sqrt(c)
    sd[p + "proj.bias"] = 0.05 * torch.randn(c, generator=g)


def make_state_dict(family="wan2.1", dim=None, z_dim=None, dim_mult=(1, 2, 4, 4), num_res_blocks=2,
                    temporal_up=(True, True, False), seed=0, with_encoder_keys=True):
    """Random weights with the key names and shapes of the released VAEs (real widths by default)."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    if family == "wan2.1":
        dim = dim or 96
        z_dim = z_dim or 16
    else:
        dim = dim or 256
        z_dim = z_dim or 48
    dims = [dim * u for u in [dim_mult[-1]] + list(dim_mult[::-1])]
    sd["conv2.weight"] = torch.randn(z_dim, z_dim, 1, 1, 1, generator=g) / math.sqrt(z_dim)
    sd["conv2.bias"] = 0.05 * torch.randn(z_dim, generator=g)
    sd["decoder.conv1.weight"] = torch.randn(dims[0], z_dim, 3, 3, 3, generator=g) / math.sqrt(z_dim * 27)
    sd["decoder.conv1.bias"] = 0.05 * torch.randn(dims[0], generator=g)
    _res(sd, "decoder.middle.0.", dims[0], dims[0], g)
    _attn(sd, "decoder.middle.1.", dims[0], g)
    _res(sd, "decoder.middle.2.", dims[0], dims[0], g)
    levels = len(dim_mult)
    if family == "wan2.1":
        idx = 0
        for i in range(levels):
            cin, cout = dims[i], dims[i + 1]
            if i > 0:
                cin //= 2
            for _ in range(num_res_blocks + 1):
                _res(sd, f"decoder.upsamples.{idx}.", cin, cout, g)
                cin = cout
                idx += 1
            if i != levels - 1:
                _resample(sd, f"decoder.upsamples.{idx}.", cout, cout // 2, temporal_up[i], g)
                idx += 1
        out_dim, out_ch = dims[-1], 3
    else:
        for i in range(levels):
            cin, cout = dims[i], dims[i + 1]
            for j in range(num_res_blocks + 1):
                _res(sd, f"decoder.upsamples.{i}.upsamples.{j}.", cin, cout, g)
                cin = cout
            if i != levels - 1:
                _resample(sd, f"decoder.upsamples.{i}.upsamples.{num_res_blocks + 1}.", cout, cout,
                          temporal_up[i], g)
        out_dim, out_ch = dims[-1], 12
    sd["decoder.head.0.gamma"] = 1 + 0.1 * torch.randn(out_dim, 1, 1, 1, generator=g)
    sd["decoder.head.2.weight"] = torch.randn(out_ch, out_dim, 3, 3, 3, generator=g) / math.sqrt(out_dim * 27)
    sd["decoder.head.2.bias"] = 0.05 * torch.randn(out_ch, generator=g)
    if with_encoder_keys:  # must be ignored by the decoder
        sd["encoder.conv1.weight"] = torch.randn(dim, 3, 3, 3, 3, generator=g)
        sd["conv1.weight"] = torch.randn(2 * z_dim, 2 * z_dim, 1, 1, 1, generator=g)
    return sd


# ---------------------------------------------------------------------------------------------
# ComfyUI-style spatial tiling baseline (from the description in docs: tiles decoded
# independently as if each were a whole image, feathered with a linear ramp on both ends)


def comfy_style_tiled(sd, z, tile, overlap, scale):
    """z [B,C,T,h,w]; tile/overlap in latent px; returns decoder output [B,3,F,H,W] float32 CPU."""
    b, c, t, h, w = z.shape
    out = None
    div = None
    feather = overlap * scale

    def origins(size):
        if size <= tile:
            return [0]
        starts = list(range(0, size - overlap, tile - overlap))
        return sorted({min(s, size - tile) for s in starts})

    for y0 in origins(h):
        for x0 in origins(w):
            zt = z[:, :, :, y0:y0 + tile, x0:x0 + tile]
            y = decode_video(sd, zt).float().cpu()
            if out is None:
                out = torch.zeros(b, 3, y.shape[2], h * scale, w * scale)
                div = torch.zeros(1, 1, 1, h * scale, w * scale)
            th, tw = y.shape[-2:]
            mask = torch.ones(th, tw)
            for i in range(feather):
                ramp = (i + 1) / feather
                mask[i, :] = torch.minimum(mask[i, :], torch.tensor(ramp))
                mask[th - 1 - i, :] = torch.minimum(mask[th - 1 - i, :], torch.tensor(ramp))
                mask[:, i] = torch.minimum(mask[:, i], torch.tensor(ramp))
                mask[:, tw - 1 - i] = torch.minimum(mask[:, tw - 1 - i], torch.tensor(ramp))
            ys, xs = y0 * scale, x0 * scale
            out[..., ys:ys + th, xs:xs + tw] += y * mask
            div[..., ys:ys + th, xs:xs + tw] += mask
    return out / div
