"""One ComfyUI stage at a time, the way ComfyUI runs it, on random weights: a few real blocks of a DiT at the
real token count, a few text-encoder layers at the padded length, the VAE decode / encode. Used by peaks.py
(step 3) and promise.py (step 4).

`device` is 'cuda' (a measurement: the caching allocator's peaks), or 'meta' on the CPU dry run: the same code
at the real sizes with nothing allocated, the live-tensor meter of common.py giving what `allocated` would be
(no allocator rounding, no cuBLAS/cuDNN workspaces). The native decoders cannot run on `meta`: on the CPU
they run at tiny sizes (see promise.py).

Every result: weights_bytes (parameters instantiated), inputs_bytes, ballast_bytes (an untouched allocation
standing for weights the run does not instantiate), peak_allocated_bytes / peak_reserved_bytes (absolute,
everything included), activation_bytes = peak_allocated - weights - inputs - ballast, seconds, meter.
"""
import math
import types

import torch
import torch.nn.functional as F

import blocks as B
import common

STORE = {"fp8_e4m3fn": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}


def compute_dtype(precision):
    return torch.float16 if precision == "fp16" else (torch.float32 if precision == "fp32" else torch.bfloat16)


def _measure(device, build, run, ballast_bytes):
    """build() -> (module, inputs tuple); run(module, inputs) -> output. Returns the result dict."""
    common.free_cuda()
    module, inputs = build()
    wbytes = B.param_bytes(module) if module is not None else 0
    ibytes = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
    ballast = None
    if ballast_bytes > 0:
        ballast = torch.empty(int(ballast_bytes), dtype=torch.uint8, device=device)
    base = wbytes + ibytes + max(0, int(ballast_bytes))
    try:
        with torch.inference_mode():
            if device == "cuda":
                with common.Meter("cuda") as m:
                    _, t = common.timed("cuda", lambda: run(module, inputs))
                alloc, res, meter = m.allocated, m.reserved, m.meter
            else:
                with common.Meter("cpu") as m:
                    _, t = common.timed("cpu", lambda: run(module, inputs))
                alloc = res = base + m.allocated
                meter = "live-tensors(meta)" if device == "meta" else m.meter
    finally:
        del ballast, module, inputs
        common.free_cuda()
    return dict(weights_bytes=wbytes, inputs_bytes=ibytes, ballast_bytes=max(0, int(ballast_bytes)),
                peak_allocated_bytes=alloc, peak_reserved_bytes=res, activation_bytes=alloc - base, seconds=t,
                meter=meter)


# -------------------------------------------------------------------------------------------- DiT

def dit_block_bytes(name, precision, device="meta"):
    """Bytes of one block of each kind and of the non-block weights, from the instantiated modules (meta)."""
    c = B.DIT[name]
    dt, store = compute_dtype(precision), STORE.get(precision)
    m = B.make_dit(name, c, 1, "meta", dt, store)
    if c["kind"] in ("flux1", "flux2"):
        per = {"double": B.param_bytes(m.dbl[0]), "single": B.param_bytes(m.sgl[0])}
        io = B.param_bytes(m) - per["double"] - per["single"]
    else:
        per = {"block": B.param_bytes(m.blocks[0])}
        io = B.param_bytes(m) - per["block"]
    return per, io, B.full_weight_bytes(c, per, io, 1)


def run_dit(name, width, height, frames, batch, precision, device, n_blocks=2, ballast_bytes=0, tiny=False,
            modulation=None):
    c = B.tiny(B.DIT[name]) if tiny else dict(B.DIT[name])
    if modulation and c.get("per_token_mod"):
        c["per_token_mod"] = modulation
    dt, store = compute_dtype(precision), STORE.get(precision)
    tokens = B.dit_tokens(name, width, height, frames)

    def build():
        m = B.make_dit(name, c, n_blocks, device, dt, store)
        return m, B.dit_inputs(c, tokens, batch, device, dt, latent_frames=(frames - 1) // c.get("t_stride", 4) + 1)

    r = _measure(device, build, lambda m, x: m(*x), ballast_bytes)
    r.update(tokens=tokens, blocks_run=n_blocks)
    return r


# -------------------------------------------------------------------------------------------- text encoders

def run_text(name, batch, precision, device, n_layers=2, ballast_bytes=0, tiny=False):
    c = B.tiny(B.TEXT[name]) if tiny else B.TEXT[name]
    dt, store = compute_dtype(precision), STORE.get(precision)

    def build():
        m = B.TextStack(c, n_layers, device, dt, store).eval()
        return m, (torch.randn(batch, c["tokens"], c["hidden"], device=device, dtype=dt),)

    r = _measure(device, build, lambda m, x: m(*x), ballast_bytes)
    r.update(tokens=c["tokens"], blocks_run=n_layers)
    return r


def text_full_weight_bytes(name, precision):
    c = B.TEXT[name]
    one = B.param_bytes(B.TextStack(c, 1, "meta", compute_dtype(precision), STORE.get(precision)))
    eb = 1 if precision in STORE else (4 if precision == "fp32" else 2)
    return one * c["layers"] + c["vocab"] * c["hidden"] * eb


# -------------------------------------------------------------------------------------------- KL VAE (eager)

def sdpa_attn_forward(self, x):
    """The mid-block attention the way ComfyUI's VAE runs it (one head over h*w tokens through SDPA)."""
    b, c, h, w = x.shape
    n = self.norm(x)
    q, k, v = (t(n).reshape(b, 1, c, h * w).transpose(2, 3) for t in (self.q, self.k, self.v))
    out = B.attention(q, k, v)  # [b, hw, c]
    return x + self.proj_out(out.transpose(1, 2).reshape(b, c, h, w))


def kl_decoder(rk, device, dtype, widths=(128, 256, 512, 512), blocks=3, z=16):
    m = rk.KLDecoderOnly(z, widths, blocks, post_quant=False)
    m = m.to(device=device, dtype=dtype).eval()
    for mod in m.modules():
        if isinstance(mod, rk.AttnBlock):
            mod.forward = types.MethodType(sdpa_attn_forward, mod)
    return m


class KLEncoder(torch.nn.Module):
    """The ldm/Flux VAE encoder (Rombach et al. 2022; Flux ae: ch 128, mult 1,2,4,4, 2 res blocks per level,
    mid attention, 2*z output): conv_in -> levels [res x2, stride-2 conv] -> mid -> norm, SiLU, conv_out."""

    def __init__(self, rk, widths=(128, 256, 512, 512), blocks=2, z=16):
        super().__init__()
        self.conv_in = torch.nn.Conv2d(3, widths[0], 3, padding=1)
        self.down = torch.nn.ModuleList()
        c = widths[0]
        for i, w in enumerate(widths):
            lvl = torch.nn.Module()
            lvl.block = torch.nn.ModuleList()
            for _ in range(blocks):
                lvl.block.append(rk.ResnetBlock(c, w))
                c = w
            if i != len(widths) - 1:
                lvl.downsample = torch.nn.Conv2d(c, c, 3, stride=2)
            self.down.append(lvl)
        self.mid = rk.Mid(c)
        self.norm_out = torch.nn.GroupNorm(32, c, eps=1e-6)
        self.conv_out = torch.nn.Conv2d(c, 2 * z, 3, padding=1)

    def forward(self, x):
        h = self.conv_in(x)
        for lvl in self.down:
            for b in lvl.block:
                h = b(h)
            if hasattr(lvl, "downsample"):
                h = lvl.downsample(F.pad(h, (0, 1, 0, 1)))
        h = self.mid.block_2(self.mid.attn_1(self.mid.block_1(h)))
        return self.conv_out(F.silu(self.norm_out(h)))


def run_kl_decode(rk, width, height, batch, precision, device, ballast_bytes=0, tiny=False):
    dt = compute_dtype(precision)
    kw = dict(widths=(16, 32, 32), blocks=1) if tiny else {}
    up = 4 if tiny else 8

    def build():
        m = kl_decoder(rk, device, dt, **kw)
        return m, (torch.randn(batch, 16, height // up, width // up, device=device, dtype=dt),)

    return _measure(device, build, lambda m, x: m(x[0]), ballast_bytes)


def run_kl_encode(rk, width, height, batch, precision, device, ballast_bytes=0, tiny=False):
    dt = compute_dtype(precision)
    kw = dict(widths=(16, 32, 32), blocks=1) if tiny else {}

    def build():
        m = KLEncoder(rk, **kw)
        for mod in m.modules():
            if isinstance(mod, rk.AttnBlock):
                mod.forward = types.MethodType(sdpa_attn_forward, mod)
        m = m.to(device=device, dtype=dt).eval()
        return m, (torch.randn(batch, 3, height, width, device=device, dtype=dt),)

    return _measure(device, build, lambda m, x: m(x[0]), ballast_bytes)


class _CausalConv(torch.nn.Module):
    """3-D convolution padded causally in time (kt - 1 frames on the left: what the two-frame cache holds
    when a chunk follows earlier ones), symmetrically in space."""

    def __init__(self, cin, cout, k=(3, 3, 3), stride=(1, 1, 1)):
        super().__init__()
        self.conv = torch.nn.Conv3d(cin, cout, k, stride=stride)
        self.pad = (k[2] // 2, k[2] // 2, k[1] // 2, k[1] // 2, k[0] - 1, 0)

    def forward(self, x):
        return self.conv(F.pad(x, self.pad))


class _WanRes(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.g1 = torch.nn.Parameter(torch.ones(cin, 1, 1, 1))
        self.c1 = _CausalConv(cin, cout)
        self.g2 = torch.nn.Parameter(torch.ones(cout, 1, 1, 1))
        self.c2 = _CausalConv(cout, cout)
        self.short = torch.nn.Conv3d(cin, cout, 1) if cin != cout else None

    @staticmethod
    def _rms(x, g):
        return F.normalize(x, dim=1) * math.sqrt(x.shape[1]) * g

    def forward(self, x):
        h = self.c2(F.silu(self._rms(self.c1(F.silu(self._rms(x, self.g1))), self.g2)))
        return h + (self.short(x) if self.short is not None else x)


class WanEncoderChunk(torch.nn.Module):
    """The Wan 2.1 VAE encoder (wan/modules/vae.py Encoder3d as described in facts §1.4: dim 96, mult 1,2,4,4,
    2 residual blocks per level, RMS norm, causal 3-D convs, stride-2 spatial downsampling with a time
    downsampling conv at the last two, mid-block attention per frame, 2*z outputs) over ONE chunk of 4 frames,
    the unit ComfyUI encodes at a time after the first frame (the causal padding stands for the cache)."""

    def __init__(self, dim=96, mult=(1, 2, 4, 4), blocks=2, z=16, tdown=(False, True, True)):
        super().__init__()
        dims = [dim * u for u in (1,) + tuple(mult)]
        self.conv1 = _CausalConv(3, dims[0])
        self.levels = torch.nn.ModuleList()
        for i in range(len(mult)):
            lvl = torch.nn.Module()
            lvl.res = torch.nn.ModuleList([_WanRes(dims[i] if j == 0 else dims[i + 1], dims[i + 1]) for j in range(blocks)])
            if i != len(mult) - 1:
                lvl.down = torch.nn.Conv2d(dims[i + 1], dims[i + 1], 3, stride=2)
                if tdown[i]:
                    lvl.tconv = torch.nn.Conv3d(dims[i + 1], dims[i + 1], (3, 1, 1), stride=(2, 1, 1))
            self.levels.append(lvl)
        c = dims[-1]
        self.mid1, self.mid2 = _WanRes(c, c), _WanRes(c, c)
        self.attn_qkv, self.attn_proj = torch.nn.Conv2d(c, 3 * c, 1), torch.nn.Conv2d(c, c, 1)
        self.g_head = torch.nn.Parameter(torch.ones(c, 1, 1, 1))
        self.head = _CausalConv(c, 2 * z)

    @staticmethod
    def _frames(x, fn):
        b, c, t, h, w = x.shape
        y = fn(x.transpose(1, 2).reshape(b * t, c, h, w))
        return y.reshape(b, t, *y.shape[1:]).transpose(1, 2)

    def forward(self, x):
        x = self.conv1(x)
        for lvl in self.levels:
            for r in lvl.res:
                x = r(x)
            if hasattr(lvl, "down"):
                x = self._frames(x, lambda f, d=lvl.down: d(F.pad(f, (0, 1, 0, 1))))
                if hasattr(lvl, "tconv"):
                    x = lvl.tconv(F.pad(x, (0, 0, 0, 0, 2, 0)))
        x = self.mid1(x)

        def attn(f):
            n, c, h, w = f.shape
            q, k, v = self.attn_qkv(F.normalize(f, dim=1) * math.sqrt(c)).reshape(n, 3, 1, c, h * w).transpose(-1, -2).unbind(1)
            o = B.attention(q, k, v)  # [n, hw, c]
            return f + self.attn_proj(o.transpose(1, 2).reshape(n, c, h, w))

        x = self.mid2(self._frames(x, attn))
        return self.head(F.silu(_WanRes._rms(x, self.g_head)))


def run_wan_encode(width, height, batch, precision, device, tiny=False):
    dt = compute_dtype(precision)
    kw = dict(dim=8) if tiny else {}

    def build():
        m = WanEncoderChunk(**kw).to(device=device, dtype=dt).eval()
        return m, (torch.randn(batch, 3, 4, height, width, device=device, dtype=dt),)

    return _measure(device, build, lambda m, x: m(x[0]), 0)


# -------------------------------------------------------------------------------------------- native decoders

_SD = {}


def vae_state_dict(family, dim=None):
    """Random weights of a VAE decoder (CPU fp32), made once per process: the Wan 2.2 decoder's 555 M
    parameters take seconds of CPU time to draw. family: 'kl' (Flux), 'kl-flux2', 'wan2.1', 'wan2.2'."""
    key = (family, dim)
    if key not in _SD:
        if family.startswith("kl"):
            import reference_kl_vae as rk
            widths, blocks = ((32, 64, 64), 2) if dim else ((128, 256, 512, 512), 3)
            z, pq = (32, True) if family == "kl-flux2" else (16, False)
            _SD[key] = rk.state_dict_of(rk.random_vae(z_channels=z, widths=widths, blocks=blocks, post_quant=pq, seed=0))
        else:
            import reference_wan_vae as rw
            _SD[key] = rw.make_state_dict(family, dim=dim, seed=0, with_encoder_keys=False)
    return _SD[key]

def run_native_decode(ht, sd, latent, device, dtype, ballast_bytes=0, **kw):
    """Headroom's decoder as the node runs it (weights on the device, image returned on the CPU)."""
    common.free_cuda()
    wbytes = sum(v.numel() * v.element_size() for v in sd.values())
    ballast = torch.empty(int(ballast_bytes), dtype=torch.uint8, device=device) if ballast_bytes > 0 else None
    kind = "auto" if device == "cuda" else "rss"
    try:
        with common.Meter(device, kind) as m:
            (img, info), t = common.timed(device, lambda: ht.decode(sd, latent, device=device, dtype=dtype, **kw))
    finally:
        del ballast
    extra = 0 if device == "cuda" else wbytes + int(ballast_bytes)
    return dict(weights_bytes=wbytes, inputs_bytes=latent.numel() * latent.element_size(), ballast_bytes=ballast_bytes,
                peak_allocated_bytes=m.allocated + extra, peak_reserved_bytes=m.reserved + extra,
                activation_bytes=m.allocated + extra - wbytes - int(ballast_bytes), seconds=t, meter=m.meter,
                info=info, image=img)


def gib(b):
    return b / common.GIB if b is not None and not (isinstance(b, float) and math.isnan(b)) else float("nan")
