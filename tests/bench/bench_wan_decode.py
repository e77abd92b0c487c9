"""Benchmark of the native Wan VAE decoders (random weights, real architecture) on this machine.

  HEADROOM_BUILD_DIR=build .venv/bin/python tests/bench/bench_wan_decode.py \
      --family wan2.1 --height 256 --width 320 --latent-frames 5 --tile-px 128

Reports, each as time and error against the native full decode:
  reference  PyTorch eager running tests/python/reference_wan_vae.py (the whole clip at once)
  comfyui    ComfyUI's own WanVAE.decode (eager, one latent frame at a time), when COMFYUI_PATH is set
  full / exact / blend   the native modes (exact and blend at --tile-px)
  comfy-tiles  ComfyUI-style spatial tiling at the same tile: tiles decoded independently over the
               whole clip, feathered linear blend over an overlap of tile/4 (the 3-D fallback's rule)
and the peak resident memory of each native mode (a fresh process each) next to the plan's prediction
and its budget: `full`, `exact`, `blend` (no budget; their own plan is the figure to stay under) and `auto`
under budgets of 1/2 and 1/4 of `full`'s planned peak. --memory-only prints just these lines:

  HEADROOM_BUILD_DIR=build nice .venv/bin/python tests/bench/bench_wan_decode.py --memory-only \
      --family wan2.1 --height 256 --width 320 --latent-frames 1 --tile-px 128

Measured peak = decoder weights (loaded before the decode, shared with the decoder in fp32 on the CPU)
+ the peak RSS (VmHWM) above the state just before the decode. On the CPU the device is the host, so a
plan that parks the causal cache "in CPU memory" (park) keeps it in the same RSS: its device figure
leaves out what a GPU run would hold on the host, and the measured RSS includes it.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
BUILD = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
sys.path.insert(0, str(BUILD / "python"))

import reference_wan_vae as ref  # noqa: E402


def setup(args):
    sd = ref.make_state_dict(args.family, seed=0, with_encoder_keys=False)
    z = sd["conv2.weight"].shape[0]
    scale = 8 if args.family == "wan2.1" else 16
    lat = torch.randn(1, z, args.latent_frames, args.height // scale, args.width // scale,
                      generator=torch.Generator().manual_seed(1))
    return sd, lat, scale


def decoder_weight_bytes(sd, dtype_bytes):
    return sum(v.numel() for k, v in sd.items() if k.startswith("decoder.") or k.startswith("conv2.")) * dtype_bytes


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss():
    """Linux: writing 5 to clear_refs resets VmHWM, so setup's temporaries do not count."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(args):
    """One native decode in this fresh process; prints JSON with the peak RSS above the start."""
    import _headroom_torch as ops
    sd, lat, _ = setup(args)
    torch.set_num_threads(args.threads)
    before = rss_bytes()
    reset_peak_rss()
    t0 = time.perf_counter()
    kw = dict(mode=args.child, tile_px=args.tile_px if args.child in ("exact", "blend") else 0)
    if args.budget:
        kw["budget_bytes"] = args.budget
    _, info = ops.decode(sd, lat, **kw)
    dt = time.perf_counter() - t0
    peak = peak_rss_bytes()
    out = {k: info[k] for k in ("mode", "tiles", "tile_latent", "halo_latent", "planned_peak_bytes")}
    out.update(seconds=dt, peak_rss_above_start=peak - before, weights_bytes=decoder_weight_bytes(sd, 4))
    print(json.dumps(out))


def measure_memory(args, mode, budget=0):
    cmd = [sys.executable, __file__, "--child", mode, "--family", args.family, "--height", str(args.height),
           "--width", str(args.width), "--latent-frames", str(args.latent_frames), "--tile-px", str(args.tile_px),
           "--threads", str(args.threads), "--budget", str(budget)]
    # glibc keeps freed heap blocks resident (its mmap threshold grows after large frees), so peak RSS
    # would count memory the decoder already released; a fixed threshold maps every large tensor on its
    # own, and RSS then follows the live tensors, as a device's allocated bytes would.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode:
        raise RuntimeError(res.stderr[-2000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def psnr(a, b):
    mse = ((a - b) ** 2).mean().item()
    return float("inf") if mse == 0 else 10 * math.log10(1.0 / mse)


def timed(fn, runs):
    best, out = float("inf"), None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def comfyui_decoder(args, sd):
    path = os.environ.get("COMFYUI_PATH")
    if not path:
        return None
    sys.path.insert(0, path)
    import comfy.cli_args
    comfy.cli_args.args.cpu = True
    import comfy.model_management  # noqa: F401
    cfg = dict(dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True])
    if args.family == "wan2.1":
        import comfy.ldm.wan.vae as v
        model = v.WanVAE(dim=96, z_dim=16, **cfg)
    else:
        import comfy.ldm.wan.vae2_2 as v
        model = v.WanVAE(dim=160, dec_dim=256, z_dim=48, **cfg)
    model.load_state_dict({k: t for k, t in sd.items() if k.startswith(("decoder.", "conv2."))}, strict=False)
    return model.eval()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--family", default="wan2.1", choices=["wan2.1", "wan2.2"])
    p.add_argument("--height", type=int, default=256)
    p.add_argument("--width", type=int, default=320)
    p.add_argument("--latent-frames", type=int, default=5)
    p.add_argument("--tile-px", type=int, default=128)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--skip-reference", action="store_true")
    p.add_argument("--child", default="")
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--memory-only", action="store_true", help="only the peak-memory lines (no timing/PSNR decodes)")
    args = p.parse_args()
    if args.child:
        return child(args)

    import _headroom_torch as ops
    torch.set_num_threads(args.threads)
    sd, lat, scale = setup(args)
    if args.memory_only:
        del sd
        return memory_table(args, ops, lat)
    frames = 4 * args.latent_frames - 3
    print(f"# {args.family}, random weights, fp32 CPU ({torch.get_num_threads()} threads), "
          f"{frames} frames at {args.height}x{args.width}, latent {tuple(lat.shape)}, tile {args.tile_px} px", flush=True)
    print(f"{'mode':12} {'seconds':>8} {'x full':>7} {'PSNR dB':>8} {'max err':>9}  tiles", flush=True)
    t_full, (full, info_full) = timed(lambda: ops.decode(sd, lat, mode="full"), args.runs)

    def row(name, t, img, info=None):
        ps, err = psnr(img, full), (img - full).abs().max().item()
        tiles = (info or {}).get("tiles", "")
        print(f"{name:12} {t:8.2f} {t / t_full:7.2f} {ps:8.1f} {err:9.2e}  {tiles}", flush=True)

    row("full", t_full, full, info_full)
    for mode in ("exact", "blend"):
        t, (img, info) = timed(lambda: ops.decode(sd, lat, mode=mode, tile_px=args.tile_px), args.runs)
        row(mode, t, img, info)
    tile_lat = args.tile_px // scale
    t, raw = timed(lambda: ref.comfy_style_tiled(sd, lat, tile_lat, max(1, tile_lat // 4), scale), 1)
    row("comfy-tiles", t, ref.to_image(raw))
    if not args.skip_reference:
        with torch.no_grad():
            t, raw = timed(lambda: ref.decode_video(sd, lat), 1)
        row("reference", t, ref.to_image(raw))
    model = comfyui_decoder(args, sd)
    if model is not None:
        with torch.no_grad():
            t, raw = timed(lambda: model.decode(lat).float(), 1)
        row("comfyui", t, ref.to_image(raw))

    memory_table(args, ops, lat)


def memory_table(args, ops, lat):
    shape = list(lat.shape)
    full_plan = ops.plan(args.family, shape, mode="full", dtype_bytes=4)
    full_peak = full_plan["peak_bytes"]
    print(f"\n# peak memory, fp32 CPU, fresh process each: measured = weights {full_plan['weights_bytes'] / 2**20:.0f} MiB "
          f"+ peak RSS above the state before the decode; planned = the plan's peak (weights included)")
    print(f"{'run':16} {'budget':>9} {'planned':>9} {'measured':>9} {'meas/plan':>9}  {'under':5}  plan")
    mib = lambda b: f"{b / 2**20:6.0f} MiB"  # noqa: E731
    runs = [("full", 0, 0), ("exact", 0, args.tile_px), ("blend", 0, args.tile_px)]
    runs += [(f"auto 1/{d}", full_peak // d, 0) for d in (2, 4)]
    for name, budget, tile_px in runs:
        mode = name.split()[0]
        try:
            plan = ops.plan(args.family, shape, mode=mode, tile_px=tile_px, budget_bytes=budget, dtype_bytes=4)
        except ValueError as e:  # the plan refuses the budget before any decode
            print(f"{name:16} {mib(budget) if budget else '-':>9}  cannot run: {e}", flush=True)
            continue
        m = measure_memory(args, mode, budget)
        measured = m["weights_bytes"] + m["peak_rss_above_start"]
        limit = budget or m["planned_peak_bytes"]  # without a budget the plan itself is the bound
        how = f"{m['mode']} {m['tiles']} tiles of {m['tile_latent']} latent px" + (" park" if plan["park_on_cpu"] else "")
        print(f"{name:16} {mib(budget) if budget else '-':>9} {mib(m['planned_peak_bytes'])} {mib(measured)} "
              f"{measured / m['planned_peak_bytes']:9.2f}  {'yes' if measured <= limit else 'NO':5}  {how}, "
              f"{m['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
