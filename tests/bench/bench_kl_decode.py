"""Benchmark of the native KL (Flux) VAE decoder on the real Flux VAE architecture with random weights
(widths 128/256/512/512, 3 resnets per level, 16 latent channels, no post_quant_conv).

Measures, in one run on this machine:
  1. native full vs PyTorch eager running the reference module (reference_kl_vae.py)  target <= 1.0
  2. native exact vs native full                                                       target <= 1.3
  3. exact vs a ComfyUI-style three-pass tiled decode (tilings (t/2, 2t), (2t, t/2), (t, t), each
     feathered over the overlap and normalised, then averaged) at the same tile: time ratio and
     PSNR against full                                                 target >= 2x faster, >= 80 dB
  4. fast mode (statistics from a downscaled pass, one pass per tile with a receptive-field halo):
     its time is also the cost of halo recompute, against exact's layer-wise halo exchange
  5. peak memory of exact with budgets of 1/2 and 1/4 of full's measured peak.

Peak memory on the CPU is the process's peak resident set (VmHWM) above the resident set just
before the call (reset between runs by writing 5 to /proc/self/clear_refs, Linux), plus the decoder's
fp32 weights (used in place, so already resident before the call; a GPU holds them in VRAM). On the CPU the
"parked" activations live in the same RAM, so the report also gives the device-side figure
(peak RSS minus the parked whole-image activations) that a GPU run would hold in VRAM.

--flux2: the FLUX.2 VAE instead (32 latent channels, post_quant_conv, latent BatchNorm with random
statistics): the latent is ComfyUI's packed [1, 128, size/16, size/16], the eager side is
reference_flux2_vae.py, and the three-pass baseline tiles the packed latent (ComfyUI's decode per tile).

usage: HEADROOM_BUILD_DIR=build .venv/bin/python tests/bench/bench_kl_decode.py [--size 512] [--tile 256] [--flux2]
"""
import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(REPO / "tests" / "python"))
import _headroom_torch as ht  # noqa: E402
import reference_flux2_vae as rf  # noqa: E402
import reference_kl_vae as ref  # noqa: E402


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def measure(fn):
    """(result, seconds, peak RSS above the starting RSS in bytes)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        can_reset = True
    except OSError:
        can_reset = False
    base = _status("VmRSS")
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    peak = _status("VmHWM") - base if can_reset else float("nan")
    return out, dt, peak


def comfy_style_tiled(decode, z, tile, overlap, up):
    """ComfyUI's three-pass tiled decode, re-implemented from its description (facts §2.2, §1.5)."""

    def one_pass(th, tw):
        B, _, h, w = z.shape
        out = torch.zeros(B, 3, h * up, w * up)
        div = torch.zeros_like(out)
        ys = [0] if h <= th else range(0, h - overlap, th - overlap)
        xs = [0] if w <= tw else range(0, w - overlap, tw - overlap)
        for y in ys:
            for x in xs:
                py, px = max(0, min(h - overlap, y)), max(0, min(w - overlap, x))
                ly, lx = min(th, h - py), min(tw, w - px)
                ps = decode(z[:, :, py:py + ly, px:px + lx]).float()
                mask = torch.ones_like(ps)
                f = overlap * up
                for d in (2, 3):
                    if f >= mask.shape[d]:
                        continue
                    for t in range(f):
                        a = (t + 1) / f
                        mask.narrow(d, t, 1).mul_(a)
                        mask.narrow(d, mask.shape[d] - 1 - t, 1).mul_(a)
                out[:, :, py * up:(py + ly) * up, px * up:(px + lx) * up] += ps * mask
                div[:, :, py * up:(py + ly) * up, px * up:(px + lx) * up] += mask
        return out / div

    return (one_pass(tile // 2, tile * 2) + one_pass(tile * 2, tile // 2) + one_pass(tile, tile)) / 3.0


def psnr(a, b):
    mse = (a.double() - b.double()).pow(2).mean().item()
    return float("inf") if mse == 0 else 10 * math.log10(1.0 / mse)


def budgets(res, sd, z, full, m_full, wbytes):
    """exact with budgets of 1/2 and 1/4 of full's measured peak."""
    for frac in (2, 4):
        budget = int(m_full / frac)
        try:
            (img, info), t, m = measure(lambda: ht.decode(sd, z, mode="exact", budget_bytes=budget))
            m += wbytes
            res[f"budget_1/{frac}"] = {
                "budget": budget, "peak": m, "seconds": t, "tile_latent": info["tile_latent"],
                "park_on_cpu": info["park_on_cpu"], "planned_peak": info["planned_peak_bytes"],
                "parked_bytes": info.get("parked_bytes_peak", 0),
                "device_side_peak": m - (info.get("parked_bytes_peak", 0) if info["park_on_cpu"] else 0),
                "maxerr_vs_full": (img - full).abs().max().item()}
        except ValueError as e:
            res[f"budget_1/{frac}"] = {"budget": budget, "error": str(e)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512, help="output edge in pixels")
    ap.add_argument("--tile", type=int, default=256, help="tile edge in pixels (exact, fast, three-pass)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--reps", type=int, default=2, help="alternating repetitions of eager / full / exact")
    ap.add_argument("--budgets-only", action="store_true", help="only full's peak and exact at 1/2 and 1/4 of it")
    ap.add_argument("--json", type=str, default="")
    ap.add_argument("--flux2", action="store_true", help="the FLUX.2 VAE (packed 128-channel latent, BatchNorm)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.flux2:
        model = rf.random_flux2_vae(z_channels=32, widths=(128, 256, 512, 512), blocks=3, seed=0)
        sd = rf.comfy_state_dict(model)
        up = 16
        z = torch.randn(1, 128, a.size // up, a.size // up)
    else:
        model = ref.random_vae(z_channels=16, widths=(128, 256, 512, 512), blocks=3, post_quant=False, seed=0)
        sd = ref.state_dict_of(model)
        up = 8
        z = torch.randn(1, 16, a.size // up, a.size // up)
    tl = a.tile // up
    res = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
                      f"torch {torch.__version__} CPU, {torch.get_num_threads()} threads",
           "size_px": a.size, "tile_px": a.tile, "dtype": "fp32", "vae": "flux2" if a.flux2 else "flux"}

    # The fp32 weights are used in place (no copy), so they sit in the baseline RSS; add them back so
    # peaks compare with a budget the way a GPU's VRAM would hold them.
    wbytes = sum(t.numel() * t.element_size() for k, t in sd.items() if k.startswith(("decoder.", "post_quant")))
    res["weights_bytes"] = wbytes
    with torch.no_grad():
        ref.to_image(model(z[:, :, :8, :8]))  # warm-up (allocator, oneDNN)
    if a.budgets_only:
        (full, info_full), t_full, m_full = measure(lambda: ht.decode(sd, z, mode="full"))
        m_full += wbytes
        res.update({"full_s": t_full, "peak_full": m_full, "plan_full_peak": info_full["full_peak_bytes"]})
        budgets(res, sd, z, full, m_full, wbytes)
        print(json.dumps(res, indent=2))
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=2))
        return
    t_eager = t_full = t_exact = float("inf")
    # Alternate the three and keep each one's best time: the machine is shared, load comes and goes.
    for _ in range(a.reps):
        with torch.no_grad():
            eager, t, m_eager = measure(lambda: ref.to_image(model(z)))
        t_eager = min(t_eager, t)
        (full, _), t, m_full = measure(lambda: ht.decode(sd, z, mode="full"))
        t_full = min(t_full, t)
        (exact, info_ex), t, m_exact = measure(lambda: ht.decode(sd, z, mode="exact", tile_px=a.tile))
        t_exact = min(t_exact, t)
    m_eager, m_full, m_exact = m_eager + wbytes, m_full + wbytes, m_exact + wbytes
    with torch.no_grad():
        three, t_three, m_three = measure(lambda: ref.to_image(comfy_style_tiled(model, z, tl, max(1, min(8, tl // 4)), up)))
    (fast, info_fast), t_fast, _ = measure(lambda: ht.decode(sd, z, mode="fast", tile_px=a.tile))
    res.update({
        "eager_s": t_eager, "full_s": t_full, "exact_s": t_exact, "three_pass_s": t_three, "fast_s": t_fast,
        "full_vs_eager": t_full / t_eager, "exact_vs_full": t_exact / t_full, "three_pass_vs_exact": t_three / t_exact,
        "fast_vs_exact": t_fast / t_exact,
        "maxerr_full_vs_eager": (full - eager).abs().max().item(),
        "maxerr_exact_vs_full": (exact - full).abs().max().item(),
        "psnr_exact_db": psnr(exact, full), "psnr_three_pass_db": psnr(three, full), "psnr_fast_db": psnr(fast, full),
        "maxerr_three_pass": (three - full).abs().max().item(), "maxerr_fast": (fast - full).abs().max().item(),
        "peak_eager": m_eager, "peak_full": m_full, "peak_exact_at_tile": m_exact,
        "exact_tiles": info_ex["tiles"], "plan_full_peak": info_ex["full_peak_bytes"],
    })
    budgets(res, sd, z, full, m_full, wbytes)
    print(json.dumps(res, indent=2))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
