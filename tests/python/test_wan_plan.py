"""The Wan decode memory plan (core plan_decode_wan through _headroom_torch.plan) on the real
architectures. Independent figures come from ../shared/facts (§1.4 architecture and cache sizes)."""
import pytest

ops = pytest.importorskip("_headroom_torch", reason="_headroom_torch is not built (HEADROOM_BUILD_DIR)")

GIB = 2 ** 30
WAN21_720P = [1, 16, 21, 90, 160]   # 1280x720, 81 frames
WAN22_704P = [1, 48, 21, 44, 80]    # 1280x704, 81 frames


def test_weights_match_the_published_decoder_size():
    # facts §1.4: decoder 73,295,331 (Wan 2.1) and 555,049,228 (Wan 2.2) parameters, counted from the modules
    p21 = ops.plan("wan2.1", WAN21_720P, dtype_bytes=2)
    p22 = ops.plan("wan2.2", WAN22_704P, dtype_bytes=2)
    assert abs(p21["weights_bytes"] / 2 - 73_295_331) / 73_295_331 < 0.001
    assert abs(p22["weights_bytes"] / 2 - 555_049_228) / 555_049_228 < 0.001


@pytest.mark.parametrize("family,shape,cache_elems_per_latent_px", [
    ("wan2.1", WAN21_720P, 151_328),  # facts §1.4: cached elements per latent pixel, summed over the convs
    ("wan2.2", WAN22_704P, 456_800),
])
def test_full_peak_covers_weights_and_the_causal_cache(family, shape, cache_elems_per_latent_px):
    p = ops.plan(family, shape, mode="full", dtype_bytes=2)
    cache = cache_elems_per_latent_px * shape[3] * shape[4] * 2
    assert p["mode"] == "full" and p["tiles"] == 1
    assert p["full_peak_bytes"] > p["weights_bytes"] + cache
    # and it does not grow with the clip length (one latent frame at a time, output on the CPU)
    longer = ops.plan(family, shape[:2] + [shape[2] * 3] + shape[3:], mode="full", dtype_bytes=2)
    assert longer["full_peak_bytes"] == p["full_peak_bytes"]


@pytest.mark.parametrize("budget_gib", [4, 3, 2])
def test_auto_fits_the_budget_with_exact_tiles(budget_gib):
    full = ops.plan("wan2.1", WAN21_720P, dtype_bytes=2)
    assert full["mode"] == "full"
    p = ops.plan("wan2.1", WAN21_720P, budget_bytes=budget_gib * GIB, dtype_bytes=2)
    assert full["full_peak_bytes"] > budget_gib * GIB
    assert p["mode"] == "exact" and p["tiles"] > 1 and p["peak_bytes"] <= budget_gib * GIB
    assert p["halo_latent"] == 15  # receptive field after the attention (see wan_model.cpp tail_spatial_ops)


def test_smaller_budget_gives_smaller_tiles():
    tiles = [ops.plan("wan2.1", WAN21_720P, budget_bytes=b * GIB, dtype_bytes=2)["tile_latent"] for b in (6, 4, 3)]
    assert tiles == sorted(tiles, reverse=True) and tiles[0] > tiles[-1]


def test_hopeless_budget_names_budget():
    with pytest.raises(ValueError, match="budget"):
        ops.plan("wan2.2", WAN22_704P, budget_bytes=GIB, dtype_bytes=2)
