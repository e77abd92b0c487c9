"""Plain PyTorch eager blocks of the diffusion transformers and text encoders Headroom estimates, with
random weights, written from the published architectures (no code copied from any implementation):

  FLUX.1   double-stream block (separate img/txt weights, joint attention) and single-stream block
           (fused linear1 = qkv + MLP-in, linear2 = attn-out + MLP-out), QK RMSNorm, RoPE, GELU(tanh) MLP x4,
           adaLN modulation per block. Black Forest Labs, "FLUX.1" (github.com/black-forest-labs/flux,
           src/flux/model.py, modules/layers.py); dims in native/data/models.json (hidden 3072, 24 heads,
           19 double + 38 single) and ../shared/facts/vram-measurements-and-architectures.md §1.1.
  FLUX.2   the same two block kinds without biases, SwiGLU MLP of ratio 3, modulation computed once for all
           blocks (github.com/black-forest-labs/flux2 src/flux2/model.py as summarised in
           ../shared/facts/comfyui-2026.md §2.1: dev hidden 6144 / 48 heads / 8 double + 48 single; the block
           sizes 981.5 M / 490.7 M follow from these dims). klein 4B: 3072 / 24 / 5 + 20; klein 9B:
           4096 / 32 / 8 + 24 (§2.2).
  Wan      WanAttentionBlock (Wan-Video/Wan2.1 wan/modules/model.py, facts §1.3): adaLN self-attention with
           RMSNorm on q and k and 3-D RoPE, cross-attention to the 512 text tokens, GELU(tanh) FFN. Wan 2.2
           TI2V-5B's timestep varies per latent frame (the first frame is the clean image): the official code
           expands it to a per-token fp32 modulation tensor [B, L, 6, dim] (facts §1.3); per_token_mod="token"
           builds that, "frame" keeps it per latent frame [B, F, 6, dim] and broadcasts it over each frame's
           tokens (whether ComfyUI does the one or the other is to be read off a GPU run: peaks.py runs both).
  T5 / umT5 encoder layer (Raffel et al. 2020, v1.1: RMS norm, no biases, gated-GELU FFN, relative position
           bias added to the scores); CLIP-L text layer (Radford et al. 2021: pre-LN, causal mask,
           quick-GELU); decoder-only LM layers for the FLUX.2 text encoders (Mistral Small 3.x, Qwen3: RMS
           norm, grouped-query attention, RoPE, SwiGLU; Qwen3 adds per-head q/k RMS norms).

Everything is built directly on the target device (CUDA, CPU or `meta`; on `meta` nothing is allocated and
bench/gpu/common.py's LiveBytes meter accounts the real-size activations). Attention uses
F.scaled_dot_product_attention as ComfyUI does on NVIDIA ("pytorch" attention); on `meta` it is replaced by a
flash-like stand-in (output plus a [B, H, L] fp32 log-sum-exp, no L x L matrix), since SDPA's meta path would
pick the math kernel. Weights may be stored in fp8 (e4m3fn) and cast to the compute dtype per call, like
ComfyUI's manual cast.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------------------------- configs
# kind: flux1 | flux2 | wan | t5 | clip | lm. `catalog`: the name in native/data/models.json (None: not there).
DIT = {
    "flux1-dev": dict(kind="flux1", hidden=3072, heads=24, double=19, single=38, mlp_ratio=4.0, txt_tokens=256,
                      in_channels=64, context_dim=4096, catalog="flux1-dev", patch_px=16, latent_ch=16),
    "flux2-dev": dict(kind="flux2", hidden=6144, heads=48, double=8, single=48, mlp_ratio=3.0, txt_tokens=512,
                      in_channels=128, context_dim=15360, catalog=None, patch_px=16, latent_ch=128),
    "flux2-klein-4b": dict(kind="flux2", hidden=3072, heads=24, double=5, single=20, mlp_ratio=3.0, txt_tokens=512,
                           in_channels=128, context_dim=7680, catalog=None, patch_px=16, latent_ch=128),
    "flux2-klein-9b": dict(kind="flux2", hidden=4096, heads=32, double=8, single=24, mlp_ratio=3.0, txt_tokens=512,
                           in_channels=128, context_dim=12288, catalog=None, patch_px=16, latent_ch=128),
    "wan2.1-t2v-1.3b": dict(kind="wan", hidden=1536, heads=12, ffn=8960, layers=30, txt_tokens=512,
                            catalog="wan2.1-t2v-1.3b", patch_px=16, t_stride=4, per_token_mod=False),
    "wan2.1-t2v-14b": dict(kind="wan", hidden=5120, heads=40, ffn=13824, layers=40, txt_tokens=512,
                           catalog="wan2.1-t2v-14b", patch_px=16, t_stride=4, per_token_mod=False),
    "wan2.2-ti2v-5b": dict(kind="wan", hidden=3072, heads=24, ffn=14336, layers=30, txt_tokens=512,
                           catalog="wan2.2-ti2v-5b", patch_px=32, t_stride=4, per_token_mod="frame"),
}
TEXT = {
    "clip-l": dict(kind="clip", hidden=768, heads=12, ffn=3072, layers=12, tokens=77, vocab=49408, catalog="clip-l"),
    "t5-xxl": dict(kind="t5", hidden=4096, heads=64, head_dim=64, ffn=10240, layers=24, tokens=256, vocab=32128,
                   catalog="t5-xxl"),
    "umt5-xxl": dict(kind="t5", hidden=4096, heads=64, head_dim=64, ffn=10240, layers=24, tokens=512, vocab=256384,
                     catalog="umt5-xxl"),
    # FLUX.2's text encoders run up to the last hidden state they use (layers 10/20/30 of Mistral, 9/18/27 of Qwen3).
    "mistral-small-3.2": dict(kind="lm", hidden=5120, heads=32, kv_heads=8, head_dim=128, ffn=32768, layers=30,
                              tokens=512, vocab=131072, qk_norm=False, catalog=None),
    "qwen3-4b": dict(kind="lm", hidden=2560, heads=32, kv_heads=8, head_dim=128, ffn=9728, layers=27, tokens=512,
                     vocab=151936, qk_norm=True, catalog=None),
    "qwen3-8b": dict(kind="lm", hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=12288, layers=27, tokens=512,
                     vocab=151936, qk_norm=True, catalog=None),
}


def tiny(cfg):
    """The same architecture at a tiny width for the CPU dry run (head_dim 16, 2 heads)."""
    c = dict(cfg)
    c["heads"] = 2
    c["hidden"] = 32
    if "head_dim" in c:
        c["head_dim"] = 16
    if "kv_heads" in c:
        c["kv_heads"] = 1
    if "ffn" in c:
        c["ffn"] = 3 * c["hidden"]
    if "context_dim" in c:
        c["context_dim"] = 48
    return c


# ---------------------------------------------------------------------------------------------- layers

def _param(shape, fan_in, device, dtype, store=None):
    t = torch.empty(shape, device=device, dtype=dtype)
    if t.device.type != "meta":
        t.normal_(0.0, 1.0 / math.sqrt(max(1, fan_in)))
    if store is not None and store != dtype:
        t = t.to(store)
    return nn.Parameter(t, requires_grad=False)


class Lin(nn.Module):
    """Linear layer; weights stored in `store` (e.g. torch.float8_e4m3fn) are cast to the input's dtype per call."""

    def __init__(self, i, o, bias, device, dtype, store=None):
        super().__init__()
        self.weight = _param((o, i), i, device, dtype, store)
        self.bias = _param((o,), 1e6, device, dtype) if bias else None

    def forward(self, x):
        w = self.weight if self.weight.dtype == x.dtype else self.weight.to(x.dtype)
        b = None if self.bias is None else self.bias.to(x.dtype)
        return F.linear(x, w, b)


class RMS(nn.Module):
    def __init__(self, d, device, dtype, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def layer_norm(x, eps=1e-6):
    return F.layer_norm(x, (x.shape[-1],), eps=eps)


def attention(q, k, v, mask=None, causal=False):
    """q, k, v [B, H, L, D] -> [B, L, H*D]."""
    if q.device.type == "meta":
        b, h, lq, d = q.shape
        out = torch.empty_like(q)
        torch.empty(b, h, lq, device="meta", dtype=torch.float32)  # flash's log-sum-exp
        if mask is not None:  # a bias forces the memory-efficient kernel: no L x L buffer either
            pass
    else:
        if k.shape[1] != q.shape[1]:  # grouped-query attention
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
    b, h, lq, d = out.shape
    return out.transpose(1, 2).reshape(b, lq, h * d)


def rope(x, cos, sin):
    """Rotary embedding on pairs of the last axis; x [B, H, L, D], cos/sin [L, D/2] fp32."""
    xf = x.float().unflatten(-1, (-1, 2))
    a, b = xf[..., 0], xf[..., 1]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), -1).flatten(-2)
    return out.to(x.dtype)


def rope_tables(tokens, head_dim, device):
    pos = torch.arange(tokens, device=device, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    ang = pos[:, None] * inv[None, :]
    return ang.cos(), ang.sin()


def heads(x, n):
    b, l, _ = x.shape
    return x.view(b, l, n, -1).transpose(1, 2)


# ---------------------------------------------------------------------------------------------- FLUX

class FluxDouble(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        h, self.n, bias = c["hidden"], c["heads"], c["kind"] == "flux1"
        self.swiglu = c["kind"] == "flux2"
        m = int(h * c["mlp_ratio"])
        for s in ("img", "txt"):
            if bias:  # FLUX.1: modulation per block; FLUX.2 computes it once outside the blocks
                setattr(self, f"{s}_mod", Lin(h, 6 * h, True, device, dtype, store))
            setattr(self, f"{s}_qkv", Lin(h, 3 * h, bias, device, dtype, store))
            setattr(self, f"{s}_qn", RMS(h // self.n, device, dtype))
            setattr(self, f"{s}_kn", RMS(h // self.n, device, dtype))
            setattr(self, f"{s}_proj", Lin(h, h, bias, device, dtype, store))
            setattr(self, f"{s}_mlp0", Lin(h, 2 * m if self.swiglu else m, bias, device, dtype, store))
            setattr(self, f"{s}_mlp2", Lin(m, h, bias, device, dtype, store))

    def _mlp(self, s, x):
        y = getattr(self, f"{s}_mlp0")(x)
        if self.swiglu:
            a, b = y.chunk(2, -1)
            y = F.silu(a) * b
        else:
            y = F.gelu(y, approximate="tanh")
        return getattr(self, f"{s}_mlp2")(y)

    def forward(self, img, txt, vec, mods, pe):
        outs = {}
        qkv = {}
        for s, x in (("img", img), ("txt", txt)):
            mod = getattr(self, f"{s}_mod")(F.silu(vec)) if hasattr(self, f"{s}_mod") else mods[s]
            sh1, sc1, g1, sh2, sc2, g2 = mod[:, None, :].chunk(6, -1)
            xm = (1 + sc1) * layer_norm(x) + sh1
            q, k, v = getattr(self, f"{s}_qkv")(xm).chunk(3, -1)
            q, k, v = heads(q, self.n), heads(k, self.n), heads(v, self.n)
            qkv[s] = (getattr(self, f"{s}_qn")(q), getattr(self, f"{s}_kn")(k), v)
            outs[s] = (g1, sh2, sc2, g2)
        q = torch.cat((qkv["txt"][0], qkv["img"][0]), 2)
        k = torch.cat((qkv["txt"][1], qkv["img"][1]), 2)
        v = torch.cat((qkv["txt"][2], qkv["img"][2]), 2)
        del qkv
        q, k = rope(q, *pe), rope(k, *pe)
        a = attention(q, k, v)
        del q, k, v
        lt = txt.shape[1]
        res = []
        for s, x, part in (("txt", txt, a[:, :lt]), ("img", img, a[:, lt:])):
            g1, sh2, sc2, g2 = outs[s]
            x = x + g1 * getattr(self, f"{s}_proj")(part)
            x = x + g2 * self._mlp(s, (1 + sc2) * layer_norm(x) + sh2)
            res.append(x)
        return res[1], res[0]


class FluxSingle(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        h, self.n, bias = c["hidden"], c["heads"], c["kind"] == "flux1"
        self.swiglu = c["kind"] == "flux2"
        self.h, self.m = h, int(h * c["mlp_ratio"])
        if bias:
            self.mod = Lin(h, 3 * h, True, device, dtype, store)
        self.linear1 = Lin(h, 3 * h + (2 * self.m if self.swiglu else self.m), bias, device, dtype, store)
        self.linear2 = Lin(h + self.m, h, bias, device, dtype, store)
        self.qn, self.kn = RMS(h // self.n, device, dtype), RMS(h // self.n, device, dtype)

    def forward(self, x, vec, mods, pe):
        mod = self.mod(F.silu(vec)) if hasattr(self, "mod") else mods["single"]
        sh, sc, g = mod[:, None, :].chunk(3, -1)
        xm = (1 + sc) * layer_norm(x) + sh
        y = self.linear1(xm)
        qkv, mlp = y[..., :3 * self.h], y[..., 3 * self.h:]
        q, k, v = qkv.chunk(3, -1)
        q, k, v = self.qn(heads(q, self.n)), self.kn(heads(k, self.n)), heads(v, self.n)
        q, k = rope(q, *pe), rope(k, *pe)
        a = attention(q, k, v)
        del q, k, v, qkv
        if self.swiglu:
            p, r = mlp.chunk(2, -1)
            mlp = F.silu(p) * r
        else:
            mlp = F.gelu(mlp, approximate="tanh")
        return x + g * self.linear2(torch.cat((a, mlp), -1))


class FluxStack(nn.Module):
    """n_double double blocks then n_single single blocks of a FLUX DiT, with the input/output projections."""

    def __init__(self, c, n_double, n_single, device, dtype, store=None):
        super().__init__()
        self.c = c
        h = c["hidden"]
        self.img_in = Lin(c["in_channels"], h, True, device, dtype, store)
        self.txt_in = Lin(c["context_dim"], h, True, device, dtype, store)
        self.dbl = nn.ModuleList([FluxDouble(c, device, dtype, store) for _ in range(n_double)])
        self.sgl = nn.ModuleList([FluxSingle(c, device, dtype, store) for _ in range(n_single)])
        if c["kind"] == "flux2":  # shared modulation (computed once per step)
            self.mod_img = Lin(h, 6 * h, False, device, dtype, store)
            self.mod_txt = Lin(h, 6 * h, False, device, dtype, store)
            self.mod_single = Lin(h, 3 * h, False, device, dtype, store)
        self.final = Lin(h, c["in_channels"], True, device, dtype, store)

    def forward(self, img, txt, vec):
        pe = rope_tables(img.shape[1] + txt.shape[1], self.c["hidden"] // self.c["heads"], img.device)
        img, txt = self.img_in(img), self.txt_in(txt)
        mods = {}
        if hasattr(self, "mod_img"):
            sv = F.silu(vec)
            mods = {"img": self.mod_img(sv), "txt": self.mod_txt(sv), "single": self.mod_single(sv)}
        for b in self.dbl:
            img, txt = b(img, txt, vec, mods, pe)
        x = torch.cat((txt, img), 1)
        del img
        for b in self.sgl:
            x = b(x, vec, mods, pe)
        return self.final(layer_norm(x[:, txt.shape[1]:]))


# ---------------------------------------------------------------------------------------------- Wan

class WanBlock(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        d, self.n = c["hidden"], c["heads"]
        self.per_token = c.get("per_token_mod", False)
        self.modulation = nn.Parameter(torch.zeros(1, 6, d, device=device, dtype=torch.float32), requires_grad=False)
        for p in ("sa", "ca"):
            for w in ("q", "k", "v", "o"):
                setattr(self, f"{p}_{w}", Lin(d, d, True, device, dtype, store))
            setattr(self, f"{p}_qn", RMS(d, device, dtype))
            setattr(self, f"{p}_kn", RMS(d, device, dtype))
        self.norm3_w = nn.Parameter(torch.ones(d, device=device, dtype=dtype), requires_grad=False)
        self.ffn0 = Lin(d, c["ffn"], True, device, dtype, store)
        self.ffn2 = Lin(c["ffn"], d, True, device, dtype, store)

    def forward(self, x, e, ctx, pe):
        # e: [B, 6, d] fp32 (Wan 2.1); Wan 2.2 TI2V: per token [B, L, 6, d] (the official code) or per latent
        # frame [B, F, 6, d], broadcast over the frame's tokens (tokens are frame-major)
        if e.dim() == 3:
            m = [t for t in (self.modulation + e).chunk(6, 1)]  # 6 x [B, 1, d]
        else:
            m = list((self.modulation.unsqueeze(0) + e).unbind(2))  # 6 x [B, L or F, d]
        frames = e.shape[1] if e.dim() == 4 and e.shape[1] != x.shape[1] else 0

        def mod(t, scale, shift):  # (t * (1 + scale) + shift) in fp32, back to t's dtype
            if frames:
                b, l, d = t.shape
                return (t.float().view(b, frames, -1, d) * (1 + scale[:, :, None]) + shift[:, :, None]).view(b, l, d).to(dt)
            return (t.float() * (1 + scale) + shift).to(dt)

        def gate(t, y, g):
            if frames:
                b, l, d = t.shape
                return (t.float() + (y.float().view(b, frames, -1, d) * g[:, :, None]).view(b, l, d)).to(dt)
            return (t.float() + y.float() * g).to(dt)

        dt = x.dtype
        xm = mod(layer_norm(x), m[1], m[0])
        q = self.sa_qn(self.sa_q(xm))
        k = self.sa_kn(self.sa_k(xm))
        v = self.sa_v(xm)
        q, k = rope(heads(q, self.n), *pe), rope(heads(k, self.n), *pe)
        y = self.sa_o(attention(q, k, heads(v, self.n)))
        del q, k, v, xm
        x = gate(x, y, m[2])
        xn = F.layer_norm(x, (x.shape[-1],), weight=self.norm3_w, eps=1e-6)
        q = heads(self.ca_qn(self.ca_q(xn)), self.n)
        k = heads(self.ca_kn(self.ca_k(ctx)), self.n)
        v = heads(self.ca_v(ctx), self.n)
        x = x + self.ca_o(attention(q, k, v))
        del q, k, v, xn
        xm = mod(layer_norm(x), m[4], m[3])
        y = self.ffn2(F.gelu(self.ffn0(xm), approximate="tanh"))
        return gate(x, y, m[5])


class WanStack(nn.Module):
    def __init__(self, c, n, device, dtype, store=None):
        super().__init__()
        self.c = c
        self.blocks = nn.ModuleList([WanBlock(c, device, dtype, store) for _ in range(n)])

    def forward(self, x, e, ctx):
        pe = rope_tables(x.shape[1], self.c["hidden"] // self.c["heads"], x.device)
        for b in self.blocks:
            x = b(x, e, ctx, pe)
        return x


# ---------------------------------------------------------------------------------------------- text encoders

class T5Layer(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        d, inner = c["hidden"], c["heads"] * c["head_dim"]
        self.n = c["heads"]
        self.ln1, self.ln2 = RMS(d, device, dtype), RMS(d, device, dtype)
        self.q, self.k, self.v = (Lin(d, inner, False, device, dtype, store) for _ in range(3))
        self.o = Lin(inner, d, False, device, dtype, store)
        self.wi0, self.wi1 = Lin(d, c["ffn"], False, device, dtype, store), Lin(d, c["ffn"], False, device, dtype, store)
        self.wo = Lin(c["ffn"], d, False, device, dtype, store)

    def forward(self, x, bias):
        h = self.ln1(x)
        x = x + self.o(attention(heads(self.q(h), self.n), heads(self.k(h), self.n), heads(self.v(h), self.n), mask=bias))
        h = self.ln2(x)
        return x + self.wo(F.gelu(self.wi0(h), approximate="tanh") * self.wi1(h))


class ClipLayer(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        d = c["hidden"]
        self.n = c["heads"]
        self.q, self.k, self.v, self.o = (Lin(d, d, True, device, dtype, store) for _ in range(4))
        self.fc1, self.fc2 = Lin(d, c["ffn"], True, device, dtype, store), Lin(c["ffn"], d, True, device, dtype, store)

    def forward(self, x, _bias):
        h = layer_norm(x, 1e-5)
        x = x + self.o(attention(heads(self.q(h), self.n), heads(self.k(h), self.n), heads(self.v(h), self.n), causal=True))
        h = self.fc1(layer_norm(x, 1e-5))
        return x + self.fc2(h * torch.sigmoid(1.702 * h))


class LMLayer(nn.Module):
    def __init__(self, c, device, dtype, store=None):
        super().__init__()
        d, hd = c["hidden"], c["head_dim"]
        self.n, self.nkv, self.hd = c["heads"], c["kv_heads"], hd
        self.ln1, self.ln2 = RMS(d, device, dtype), RMS(d, device, dtype)
        self.q = Lin(d, self.n * hd, False, device, dtype, store)
        self.k = Lin(d, self.nkv * hd, False, device, dtype, store)
        self.v = Lin(d, self.nkv * hd, False, device, dtype, store)
        self.o = Lin(self.n * hd, d, False, device, dtype, store)
        self.qk_norm = c.get("qk_norm", False)
        if self.qk_norm:
            self.qn, self.kn = RMS(hd, device, dtype), RMS(hd, device, dtype)
        self.gate, self.up = Lin(d, c["ffn"], False, device, dtype, store), Lin(d, c["ffn"], False, device, dtype, store)
        self.down = Lin(c["ffn"], d, False, device, dtype, store)

    def forward(self, x, pe):
        h = self.ln1(x)
        q, k, v = heads(self.q(h), self.n), heads(self.k(h), self.nkv), heads(self.v(h), self.nkv)
        if self.qk_norm:
            q, k = self.qn(q), self.kn(k)
        q, k = rope(q, *pe), rope(k, *pe)
        x = x + self.o(attention(q, k, v, causal=True))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TextStack(nn.Module):
    def __init__(self, c, n, device, dtype, store=None):
        super().__init__()
        self.c = c
        cls = {"t5": T5Layer, "clip": ClipLayer, "lm": LMLayer}[c["kind"]]
        self.layers = nn.ModuleList([cls(c, device, dtype, store) for _ in range(n)])

    def forward(self, x):
        c, L = self.c, x.shape[1]
        if c["kind"] == "t5":  # relative position bias [1, H, L, L] (computed once, shared by the layers)
            aux = torch.zeros(1, c["heads"], L, L, device=x.device, dtype=x.dtype)
        elif c["kind"] == "lm":
            aux = rope_tables(L, c["head_dim"], x.device)
        else:
            aux = None
        for layer in self.layers:
            x = layer(x, aux)
        return x


# ---------------------------------------------------------------------------------------------- helpers

def param_bytes(module):
    return sum(p.numel() * p.element_size() for p in module.parameters())


def param_count(module):
    return sum(p.numel() for p in module.parameters())


def dit_tokens(name, width, height, frames=1):
    c = DIT[name]
    img = (height // c["patch_px"]) * (width // c["patch_px"])
    if c["kind"] == "wan":
        img *= (frames - 1) // c["t_stride"] + 1
    return img


def make_dit(name, c, n_blocks, device, dtype, store=None):
    """A stack with n_blocks of each block kind (FLUX: n double + n single)."""
    if c["kind"] in ("flux1", "flux2"):
        return FluxStack(c, n_blocks, n_blocks, device, dtype, store).eval()
    return WanStack(c, n_blocks, device, dtype, store).eval()


def dit_inputs(c, img_tokens, batch, device, dtype, latent_frames=1):
    h = c["hidden"]
    if c["kind"] in ("flux1", "flux2"):
        img = torch.randn(batch, img_tokens, c["in_channels"], device=device, dtype=dtype)
        txt = torch.randn(batch, c["txt_tokens"], c["context_dim"], device=device, dtype=dtype)
        vec = torch.randn(batch, h, device=device, dtype=dtype)
        return (img, txt, vec)
    x = torch.randn(batch, img_tokens, h, device=device, dtype=dtype)
    if c.get("per_token_mod") == "token":
        e = torch.randn(batch, img_tokens, 6, h, device=device, dtype=torch.float32) * 0.1
    elif c.get("per_token_mod"):  # per latent frame
        e = torch.randn(batch, latent_frames, 6, h, device=device, dtype=torch.float32) * 0.1
    else:
        e = torch.randn(batch, 6, h, device=device, dtype=torch.float32) * 0.1
    ctx = torch.randn(batch, c["txt_tokens"], h, device=device, dtype=dtype)
    return (x, e, ctx)


def full_weight_bytes(c, per_block, io_bytes, elem_bytes):
    """Whole-model weight bytes extrapolated from the measured block sizes: per_block maps block kind ->
    bytes of one block; io_bytes = the measured non-block weights (in/out projections, shared modulation)."""
    if c["kind"] in ("flux1", "flux2"):
        return per_block["double"] * c["double"] + per_block["single"] * c["single"] + io_bytes
    if c["kind"] == "wan":
        return per_block["block"] * c["layers"] + io_bytes
    return per_block["layer"] * c["layers"] + c["vocab"] * c["hidden"] * elem_bytes
