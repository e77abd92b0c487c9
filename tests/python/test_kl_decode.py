"""The native KL (Flux/SD) VAE decoder against an independent PyTorch reference (reference_kl_vae.py):
parity of every mode, exact tiling at several tile sizes / odd sizes / batches / CPU parking,
the memory plan, malformed inputs, progress and cancellation, the Python-callable blend, the CLI.

Golden values: the reference decoder's output (an independent implementation), and analytic
identities (blending a pointwise "decoder" must reproduce it exactly). Tolerances from the issue:
1e-4 of the output range in fp32.
"""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_kl_vae as ref  # noqa: E402

ht = pytest.importorskip("_headroom_torch", reason="native torch module not built (HEADROOM_BUILD_DIR)")

from conftest import BUILD_DIR as BUILD, REPO  # noqa: E402
TOL = 1e-4  # of the IMAGE range [0, 1]

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture(scope="module")
def flux_like():
    """16 latent channels, no post_quant_conv (like Flux), 3 levels -> x4, 2 blocks per level, reduced widths."""
    m = ref.random_vae(z_channels=16, widths=(32, 64, 64), blocks=2, post_quant=False, seed=1)
    return m, ref.state_dict_of(m)


@pytest.fixture(scope="module")
def sd_like():
    """4 latent channels with post_quant_conv (like SD1.5/SDXL), 4 levels -> x8, 3 blocks per level."""
    m = ref.random_vae(z_channels=4, widths=(32, 32, 64, 64), blocks=3, post_quant=True, seed=2)
    return m, ref.state_dict_of(m)


def reference_image(model, z):
    with torch.no_grad():
        return ref.to_image(model(z))


def maxerr(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    return (a - b).abs().max().item()


# ---------------------------------------------------------------- parity with the reference

@pytest.mark.parametrize("which", ["flux_like", "sd_like"])
def test_full_matches_independent_reference(which, request):
    model, sd = request.getfixturevalue(which)
    z = torch.randn(1, sd["decoder.conv_in.weight"].shape[1], 9, 7, generator=torch.Generator().manual_seed(3))
    img, info = ht.decode(sd, z, mode="full")
    assert img.dtype == torch.float32 and img.shape[-1] == 3 and img.min() >= 0 and img.max() <= 1
    assert info["family"] == "kl" and info["mode"] == "full"
    assert maxerr(img, reference_image(model, z)) < TOL
    assert ht.detect_vae_family(sd) == "kl"


@pytest.mark.parametrize("tile_px", [8, 20, 36])
def test_exact_equals_full_at_several_tiles_odd_sizes_batch2(flux_like, tile_px):
    model, sd = flux_like
    z = torch.randn(2, 16, 13, 11, generator=torch.Generator().manual_seed(4))  # not multiples of any tile
    full, _ = ht.decode(sd, z, mode="full")
    ex, info = ht.decode(sd, z, mode="exact", tile_px=tile_px)
    assert info["mode"] == "exact" and info["tile_latent"] == tile_px // 4 and info["tiles"] > 1
    assert maxerr(ex, full) < TOL
    assert maxerr(ex, reference_image(model, z)) < TOL


def test_exact_with_post_quant_and_x8(sd_like):
    model, sd = sd_like
    z = torch.randn(1, 4, 7, 5, generator=torch.Generator().manual_seed(5))
    ex, info = ht.decode(sd, z, mode="exact", tile_px=16)
    assert info["tiles"] == 4 * 3
    assert maxerr(ex, reference_image(model, z)) < TOL


def _parking_budget(sd, z, dtype_bytes=4):
    """Largest budget for which the plan must park activations in CPU memory (searched on the plan)."""
    widths = [sd[f"decoder.up.{i}.block.0.conv1.weight"].shape[0] for i in range(3)]
    kw = dict(latent_shape=list(z.shape), mode="exact", dtype_bytes=dtype_bytes, level_widths=widths,
              blocks_per_level=2)
    hi = ht.plan("kl", budget_bytes=0, **kw)["full_peak_bytes"]
    lo = 1
    found = None
    while lo < hi:  # plans are monotone in the budget: bisect for the unparked/parked boundary
        mid = (lo + hi) // 2
        try:
            p = ht.plan("kl", budget_bytes=mid, **kw)
        except ValueError:
            lo = mid + 1
            continue
        if p["park_on_cpu"]:
            found = mid
            lo = mid + 1
        else:
            hi = mid
    return found


def test_exact_with_budget_forcing_cpu_parking(flux_like):
    model, sd = flux_like
    z = torch.randn(2, 16, 13, 11, generator=torch.Generator().manual_seed(6))
    budget = _parking_budget(sd, z)
    assert budget is not None
    ex, info = ht.decode(sd, z, mode="auto", budget_bytes=budget)
    assert info["mode"] == "exact" and info["park_on_cpu"] and info["planned_peak_bytes"] <= budget
    assert maxerr(ex, reference_image(model, z)) < TOL


def test_auto_picks_full_without_budget_and_exact_under_a_tight_one(flux_like):
    _, sd = flux_like
    z = torch.randn(1, 16, 12, 12)
    _, info = ht.decode(sd, z)
    assert info["mode"] == "full"
    _, info2 = ht.decode(sd, z, budget_bytes=info["full_peak_bytes"] - 1)
    assert info2["mode"] == "exact" and info2["planned_peak_bytes"] < info["full_peak_bytes"]


def test_bf16_exact_close_to_fp32_reference(flux_like):
    model, sd = flux_like
    z = torch.randn(1, 16, 10, 9, generator=torch.Generator().manual_seed(7))
    full, _ = ht.decode(sd, z, mode="full", dtype="bf16")
    ex, _ = ht.decode(sd, z, mode="exact", tile_px=16, dtype=torch.bfloat16)
    r = reference_image(model, z)
    assert full.dtype == torch.float32
    # bf16 error depends on the CPU's kernels (AVX-512 vs AVX2 convolutions round differently: 0.02 on one
    # EPYC, 0.12 on another), so the bound is PyTorch's own bf16 run of the same reference model, on this
    # machine, with a little slack; never a constant tuned on one CPU.
    with torch.no_grad():
        torch_bf16 = ref.to_image(copy.deepcopy(model).to(torch.bfloat16)(z.to(torch.bfloat16)).float())
    torch_err = maxerr(torch_bf16, r)
    assert maxerr(full, r) <= 1.25 * torch_err + 1e-3
    assert maxerr(ex, r) <= 1.25 * torch_err + 1e-3
    # Exact runs the same arithmetic per pixel as full; only tile-shaped rounding may differ.
    assert maxerr(ex, full) <= 0.5 * torch_err + 1e-3


def test_fast_is_full_when_one_tile_covers_the_latent_and_bounded_otherwise(flux_like):
    model, sd = flux_like
    z = torch.randn(1, 16, 12, 10, generator=torch.Generator().manual_seed(8))
    r = reference_image(model, z)
    one, info = ht.decode(sd, z, mode="fast", tile_px=48)
    assert info["tiles"] == 1 and maxerr(one, r) < TOL
    tiled, info = ht.decode(sd, z, mode="fast", tile_px=24)
    assert info["tiles"] == 4 and torch.isfinite(tiled).all() and maxerr(tiled, r) > TOL  # estimated stats


def test_blend_mode_runs_one_feathered_pass(flux_like):
    model, sd = flux_like
    z = torch.randn(1, 16, 14, 14)
    img, info = ht.decode(sd, z, mode="blend", tile_px=32)
    assert info["mode"] == "blend" and img.shape == (1, 56, 56, 3)
    assert torch.isfinite(img).all()


# ---------------------------------------------------------------- the memory plan

def test_plan_tiles_shrink_with_the_budget_and_stay_under_it():
    shape = [1, 16, 128, 128]  # Flux 1024^2
    full = ht.plan("kl", shape, mode="auto", budget_bytes=0, dtype_bytes=2)
    assert full["mode"] == "full"
    plans = {}
    for frac in (0.9, 0.5, 0.25, 0.2):
        b = int(full["full_peak_bytes"] * frac)
        p = plans[frac] = ht.plan("kl", shape, mode="auto", budget_bytes=b, dtype_bytes=2)
        assert p["mode"] == "exact" and p["peak_bytes"] <= b
    # Whole-image activations no longer fit next to the tiles at a quarter: they go to CPU memory,
    # and with parking fixed a smaller budget means a smaller tile.
    assert plans[0.25]["park_on_cpu"] and plans[0.2]["park_on_cpu"]
    assert plans[0.2]["tile_latent"] < plans[0.25]["tile_latent"]
    with pytest.raises(ValueError, match="budget"):
        ht.plan("kl", shape, mode="auto", budget_bytes=10 << 20, dtype_bytes=2)


# ---------------------------------------------------------------- malformed inputs

def test_missing_key_is_named(flux_like):
    _, sd = flux_like
    bad = dict(sd)
    del bad["decoder.mid.attn_1.q.weight"]
    with pytest.raises(ValueError, match=r"decoder\.mid\.attn_1\.q\.weight"):
        ht.decode(bad, torch.randn(1, 16, 4, 4))


def test_wrong_shape_is_named_with_both_shapes(flux_like):
    _, sd = flux_like
    bad = dict(sd)
    bad["decoder.up.1.block.1.conv2.weight"] = torch.randn(64, 32, 3, 3)
    with pytest.raises(ValueError, match=r"decoder\.up\.1\.block\.1\.conv2\.weight.*\[64, 32, 3, 3\].*expected \[64, 64, 3, 3\]"):
        ht.decode(bad, torch.randn(1, 16, 4, 4))


def test_not_a_vae():
    with pytest.raises(ValueError, match="not a VAE"):
        ht.decode({"model.weight": torch.zeros(3)}, torch.randn(1, 16, 4, 4))


def test_wrong_latent_channels(flux_like):
    _, sd = flux_like
    with pytest.raises(ValueError, match=r"latent: has 4 channels but this VAE decodes 16"):
        ht.decode(sd, torch.randn(1, 4, 8, 8))


def test_nan_latent(flux_like):
    _, sd = flux_like
    z = torch.randn(1, 16, 8, 8)
    z[0, 3, 2, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        ht.decode(sd, z, mode="exact")


def test_budget_too_small_for_any_tile(flux_like):
    _, sd = flux_like
    with pytest.raises(ValueError, match=r"budget: .*too small"):
        ht.decode(sd, torch.randn(1, 16, 8, 8), mode="exact", budget_bytes=1 << 20)


def test_bad_mode_and_dtype(flux_like):
    _, sd = flux_like
    with pytest.raises(ValueError, match="mode"):
        ht.decode(sd, torch.randn(1, 16, 8, 8), mode="tiled")
    with pytest.raises(ValueError, match="dtype"):
        ht.decode(sd, torch.randn(1, 16, 8, 8), dtype="int8")


# ---------------------------------------------------------------- progress and cancellation

def test_progress_per_tile_and_cancel_between_tiles(flux_like):
    _, sd = flux_like
    z = torch.randn(1, 16, 12, 12)
    seen = []
    ht.decode(sd, z, mode="exact", tile_px=24, progress=lambda d, t: seen.append((d, t)))
    total = seen[-1][1]
    assert [d for d, _ in seen] == list(range(1, total + 1)) and all(t == total for _, t in seen)
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(ht.DecodeCancelled):
        ht.decode(sd, z, mode="exact", tile_px=24, cancel=cancel)
    assert len(calls) == 4


# ---------------------------------------------------------------- blending a Python callable

def test_decode_blend_reproduces_a_pointwise_decoder_exactly():
    # A "decoder" that is nearest x8 upsampling: any correct normalised blend returns it unchanged.
    fn = lambda t: torch.nn.functional.interpolate(t, scale_factor=8.0, mode="nearest")  # noqa: E731
    z = torch.randn(2, 3, 21, 17)
    calls = []
    out = ht.decode_blend(fn, z, 8, 2, (8, 8), progress=lambda d, t: calls.append(t))
    assert out.shape == (2, 3, 168, 136)
    assert maxerr(out, fn(z)) < 1e-6
    assert len(calls) == calls[0] > 1


def test_decode_blend_video_time_formula():
    def fn(t):  # [B, C, T, h, w] -> [B, C, 4T-3, 8h, 8w], Wan's frame count
        x = torch.nn.functional.interpolate(t, scale_factor=(1, 8, 8), mode="nearest")
        return torch.cat([x[:, :, :1], x[:, :, 1:].repeat_interleave(4, dim=2)], dim=2)

    z = torch.randn(1, 2, 3, 10, 9)
    out = ht.decode_blend(fn, z, 6, 2, (4, 8, 8))
    assert out.shape == (1, 2, 9, 80, 72)
    assert maxerr(out, fn(z)) < 1e-6
    with pytest.raises(ValueError, match="frames"):
        ht.decode_blend(lambda t: fn(t)[:, :, 1:], z, 6, 2, (4, 8, 8))


def test_decode_blend_of_the_reference_module(flux_like):
    model, _ = flux_like
    z = torch.randn(1, 16, 16, 16, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        out = ht.decode_blend(model, z, 8, 2, (4, 4))
        full = model(z)
    assert out.shape == full.shape
    # Per-tile GroupNorm statistics: close but not equal (this is what exact mode removes).
    span = (full.max() - full.min()).item()
    assert 1e-4 * span < maxerr(out, full) < 0.5 * span


# ---------------------------------------------------------------- CLI

def _cli(*args):
    exe = BUILD / "headroom"
    if not (BUILD / "headroom-decode").exists():
        pytest.skip("headroom-decode not built")
    return subprocess.run([str(exe), "decode", *map(str, args)], capture_output=True, text=True, timeout=300)


def test_cli_decodes_a_saved_latent_to_safetensors_and_png(flux_like, tmp_path):
    model, sd = flux_like
    vae = tmp_path / "vae.safetensors"
    enc = {"encoder.conv_in.weight": torch.zeros(8, 3, 3, 3)}  # encoder keys are ignored
    ref.save_safetensors(vae, {**sd, **enc})
    z = torch.randn(2, 16, 9, 8)
    lat = tmp_path / "run.latent"
    ref.save_safetensors(lat, {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)})
    r = _cli("--vae", vae, "--latent", lat, "--mode", "exact", "--tile", "16", "--budget", "6GiB",
             "--device", "cpu", "--dtype", "fp32", "--out", tmp_path / "img.safetensors")
    assert r.returncode == 0, r.stderr
    img = ref.load_safetensors(tmp_path / "img.safetensors")["image"]
    assert maxerr(img, reference_image(model, z)) < TOL
    r = _cli("--vae", vae, "--latent", lat, "--out", tmp_path / "img.png")
    assert r.returncode == 0, r.stderr
    from PIL import Image
    import numpy as np
    for i in range(2):
        png = np.asarray(Image.open(tmp_path / f"img_{i:05d}.png").convert("RGB"))
        want = (reference_image(model, z)[i] * 255).round().clamp(0, 255).to(torch.uint8).numpy()
        assert png.shape == (36, 32, 3) and np.abs(png.astype(int) - want.astype(int)).max() <= 1


def test_cli_errors_are_clear(flux_like, tmp_path):
    _, sd = flux_like
    vae = tmp_path / "vae.safetensors"
    ref.save_safetensors(vae, sd)
    lat = tmp_path / "bad.latent"
    ref.save_safetensors(lat, {"samples": torch.randn(1, 16, 4, 4)})
    r = _cli("--vae", vae, "--latent", lat, "--out", tmp_path / "x.png")
    assert r.returncode == 2 and "latent_tensor" in r.stderr
    trunc = tmp_path / "trunc.safetensors"
    trunc.write_bytes(vae.read_bytes()[:5000])
    r = _cli("--vae", trunc, "--latent", lat, "--out", tmp_path / "x.png")
    assert r.returncode == 2 and "trunc.safetensors" in r.stderr
    r = _cli("--vae", vae, "--latent", lat, "--out", tmp_path / "x.jpg")
    assert r.returncode == 2 and "--out" in r.stderr
    r = _cli("--vae", vae, "--latent", lat, "--budget", "lots", "--out", tmp_path / "x.png")
    assert r.returncode == 2 and "--budget" in r.stderr
