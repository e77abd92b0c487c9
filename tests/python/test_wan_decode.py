"""Native Wan 2.1 / 2.2 VAE decode (_headroom_torch.decode) against the independent reference in
reference_wan_vae.py, which runs every layer over the whole clip instead of streaming with a cache.

Reduced-width VAEs (dim 8) with the released key names keep the file fast on two busy cores."""
import math

import pytest
import torch

import reference_wan_vae as ref

ops = pytest.importorskip("_headroom_torch", reason="_headroom_torch is not built (HEADROOM_BUILD_DIR)")

Z = {"wan2.1": 4, "wan2.2": 6}  # reduced latent widths of the test VAEs
SCALE = {"wan2.1": 8, "wan2.2": 16}


def _vae(family, seed=0):
    return ref.make_state_dict(family, dim=8, z_dim=Z[family], seed=seed)


_SD = {}


def vae(family):
    if family not in _SD:
        _SD[family] = _vae(family)
    return _SD[family]


def latent(family, t, h, w, seed=1, batch=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, Z[family], t, h, w, generator=g)


def decode(sd, z, **kw):
    image, info = ops.decode(sd, z, **kw)
    return image, info


def max_err(a, b):
    return (a - b).abs().max().item()


@pytest.mark.parametrize("family", ["wan2.1", "wan2.2"])
@pytest.mark.parametrize("t", [1, 2, 5])
def test_full_matches_reference(family, t):
    sd, z = vae(family), latent(family, t, 5, 7)
    image, info = decode(sd, z, mode="full")
    expect_raw = ref.decode_video(sd, z)
    expect = ref.to_image(expect_raw)
    frames = 4 * t - 3
    assert image.shape == (frames, 5 * SCALE[family], 7 * SCALE[family], 3)
    assert image.dtype == torch.float32 and image.device.type == "cpu"
    # the bound: 1e-4 of the decoder output's range, in fp32
    span = (expect_raw.max() - expect_raw.min()).item()
    assert max_err(image, expect) * 2 < 1e-4 * span
    assert info["mode"] == "full" and info["family"] == family


@pytest.mark.parametrize("family,h,w,tiles_px", [
    ("wan2.1", 9, 11, [32, 48, 72]),  # odd latent sizes, tiles of 4, 6, 9 latent px
    ("wan2.2", 5, 7, [32, 48]),       # 2, 3 latent px (16x)
])
def test_exact_equals_full(family, h, w, tiles_px):
    sd, z = vae(family), latent(family, 2, h, w, seed=3)
    full, _ = decode(sd, z, mode="full")
    for tile in tiles_px:
        image, info = decode(sd, z, mode="exact", tile_px=tile)
        assert info["mode"] == "exact" and info["tiles"] > 1
        assert max_err(image, full) < 1e-5, tile


def test_exact_has_no_temporal_discontinuity():
    """Consecutive-frame differences of exact match full (the blink of temporal tiling would not)."""
    sd, z = vae("wan2.1"), latent("wan2.1", 5, 7, 9, seed=4)
    full, _ = decode(sd, z, mode="full")
    image, info = decode(sd, z, mode="exact", tile_px=40)
    assert image.shape[0] == 17 and info["tiles"] == 4
    assert max_err(image[1:] - image[:-1], full[1:] - full[:-1]) < 2e-5


def test_blend_within_bound():
    """Blend decodes overlapping tiles as independent images after the shared frame-global head.
    Stated bound, on this random-weight VAE: PSNR >= 20 dB against full, and never worse than a
    ComfyUI-style tiling at the same tile (which also cuts the attention into tiles)."""
    sd, z = vae("wan2.1"), latent("wan2.1", 2, 16, 16, seed=5)
    full, _ = decode(sd, z, mode="full")
    image, info = decode(sd, z, mode="blend", tile_px=96)
    assert info["mode"] == "blend" and info["tiles"] > 1
    mse = ((image - full) ** 2).mean().item()
    psnr = 10 * math.log10(1.0 / max(mse, 1e-20))
    base = ref.to_image(ref.comfy_style_tiled(sd, z, tile=12, overlap=3, scale=8))
    base_mse = ((base - full) ** 2).mean().item()
    assert psnr >= 20.0
    assert mse <= base_mse


@pytest.mark.parametrize("dtype,tol", [("bf16", 0.08), ("fp16", 0.02)])
def test_low_precision_close_to_fp32(dtype, tol):
    sd, z = vae("wan2.1"), latent("wan2.1", 2, 5, 7)
    full, _ = decode(sd, z, mode="full")
    try:
        image, _ = decode(sd, z, mode="full", dtype=dtype)
    except ValueError as e:  # a CPU LibTorch without half conv3d kernels must say so clearly
        assert "dtype" in str(e) and "not supported" in str(e)
        pytest.skip(f"{dtype} not supported on this CPU build: {e}")
    assert image.dtype == torch.float32
    assert (image - full).abs().mean().item() < tol / 4
    assert max_err(image, full) < tol * 4


def test_batch_is_frames_of_each_clip_in_order():
    sd, z = vae("wan2.1"), latent("wan2.1", 2, 5, 7, batch=2)
    image, _ = decode(sd, z, mode="full")
    assert image.shape[0] == 2 * 5
    assert max_err(image[5:], ref.decode_image(sd, z[1:])) < 1e-5


def test_auto_picks_exact_under_a_small_budget_and_equals_full():
    # 32x32 latent: with the 15-latent-px receptive field, smaller frames leave every exact tile the
    # whole frame, where tiling cannot save memory.
    sd, z = vae("wan2.1"), latent("wan2.1", 2, 32, 32, seed=6)
    full, info_full = decode(sd, z, mode="auto")
    assert info_full["mode"] == "full"
    budget = int(info_full["planned_peak_bytes"] * 0.9)
    image, info = decode(sd, z, mode="auto", budget_bytes=budget)
    assert info["mode"] == "exact" and info["tiles"] > 1
    assert info["planned_peak_bytes"] <= budget
    assert max_err(image, full) < 1e-5


def test_budget_too_small_names_the_budget():
    sd, z = vae("wan2.1"), latent("wan2.1", 1, 5, 7)
    with pytest.raises(Exception, match="budget"):
        decode(sd, z, mode="auto", budget_bytes=1000)


def test_progress_per_latent_frame_and_tile_and_cancel():
    sd, z = vae("wan2.1"), latent("wan2.1", 3, 9, 9)
    seen = []
    decode(sd, z, mode="full", progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    seen.clear()
    _, info = decode(sd, z, mode="exact", tile_px=40, progress=lambda d, t: seen.append((d, t)))
    # the frame-global head once per latent frame, then every tile over every latent frame
    total = 3 * (1 + info["tiles"])
    assert seen == [(i, total) for i in range(1, total + 1)]
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) >= 2

    with pytest.raises(Exception, match="cancel"):
        decode(sd, z, mode="full", cancel=cancel)
    assert len(calls) == 2


def test_wrong_channel_count():
    with pytest.raises(ValueError, match=r"latent.*5 channels.*4-channel"):
        decode(vae("wan2.1"), torch.randn(1, 5, 1, 4, 4))


def test_4d_latent_for_a_video_vae():
    with pytest.raises(ValueError, match=r"latent.*5-D.*4-D"):
        decode(vae("wan2.1"), torch.randn(1, 4, 4, 4))


def test_missing_key_is_named():
    sd = dict(vae("wan2.2"))
    del sd["decoder.upsamples.1.upsamples.2.residual.6.weight"]
    with pytest.raises(ValueError, match=r"decoder\.upsamples\.1\.upsamples\.2\.residual\.6\.weight"):
        decode(sd, latent("wan2.2", 1, 3, 3))


def test_wrong_shape_is_named():
    sd = dict(vae("wan2.1"))
    sd["decoder.head.2.weight"] = sd["decoder.head.2.weight"][:2]
    with pytest.raises(ValueError, match=r"decoder\.head\.2"):
        decode(sd, latent("wan2.1", 1, 3, 3))


def test_nan_latent():
    z = latent("wan2.1", 2, 4, 4)
    z[0, 1, 1, 2, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        decode(vae("wan2.1"), z)


def test_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        decode(vae("wan2.1"), latent("wan2.1", 1, 3, 3), mode="sideways")
