"""`headroom decode` against hostile input (issue 13, items 1, 6, 8, 10).

Every run has a time limit and a memory limit (RLIMIT_DATA in the child: the heap and private writable
mappings, not the address space a CUDA build of LibTorch reserves), so a regression fails fast instead
of hanging or swapping CI: a refused input must be refused from its header, before the data is read
or allocated.
"""
import json
import os
import resource
import stat
import struct
import subprocess
from pathlib import Path

import pytest
import torch

import reference_kl_vae as kl
import reference_wan_vae as wan

BUILD = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = Path(__file__).resolve().parents[2] / BUILD
CLI = BUILD / "headroom"
pytestmark = pytest.mark.skipif(not (BUILD / "headroom-decode").exists(), reason="headroom-decode is not built")

# The tiny decodes here need well under this; the refused latents below hold 1 GiB and more.
MEMORY_LIMIT = 768 * 1024 * 1024
TIME_LIMIT_S = 60


def run(*args, limit_s=TIME_LIMIT_S):
    def limits():
        resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_LIMIT, MEMORY_LIMIT))
    return subprocess.run([str(CLI), "decode", "--device", "cpu", *map(str, args)], capture_output=True, text=True,
                          timeout=limit_s, preexec_fn=limits)


@pytest.fixture(scope="module")
def kl_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_kl")
    m = kl.random_vae(z_channels=4, widths=(32, 32), blocks=1, post_quant=False, seed=1)
    kl.save_safetensors(d / "vae.safetensors", kl.state_dict_of(m))
    z = torch.randn(2, 4, 3, 3, generator=torch.Generator().manual_seed(3))
    kl.save_safetensors(d / "two.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)})
    kl.save_safetensors(d / "one.latent", {"latent_tensor": z[:1], "latent_format_version_0": torch.zeros(0)})
    return d


@pytest.fixture(scope="module")
def wan_vae(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_wan")
    kl.save_safetensors(d / "vae.safetensors", wan.make_state_dict("wan2.1", dim=8, z_dim=4, seed=2))
    return d / "vae.safetensors"


def sparse_latent(path, shape, dtype="F32"):
    """A latent whose header promises `shape` over a sparse data section: costs no disk, but reading it
    would allocate and touch every byte."""
    n = 4
    for s in shape:
        n *= s
    header = json.dumps({"latent_tensor": {"dtype": dtype, "shape": shape, "data_offsets": [0, n]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + n)
    return path


def snapshot(path):
    return path.read_bytes()


# ------------------------------------------------------------------ item 1: output paths

def test_out_naming_the_vae_is_refused_even_with_force(kl_files):
    d = kl_files
    before = snapshot(d / "vae.safetensors")
    for extra in ([], ["--force"]):
        r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--out", d / "vae.safetensors", *extra)
        assert r.returncode == 2, r.stderr
        assert "--out" in r.stderr and "--vae" in r.stderr
        assert snapshot(d / "vae.safetensors") == before


def test_out_naming_the_latent_through_a_hard_link_is_refused(kl_files, tmp_path):
    d = kl_files
    link = tmp_path / "alias.safetensors"
    os.link(d / "one.latent", link)
    before = snapshot(d / "one.latent")
    r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--out", link, "--force")
    assert r.returncode == 2 and "is the --latent file" in r.stderr and "never writes over its inputs" in r.stderr, r.stderr
    assert snapshot(d / "one.latent") == before


def test_existing_output_needs_force(kl_files, tmp_path):
    d = kl_files
    out = tmp_path / "img.safetensors"
    out.write_bytes(b"keep me")
    r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--out", out)
    assert r.returncode == 2 and "--force" in r.stderr, r.stderr
    assert out.read_bytes() == b"keep me"
    r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--out", out, "--force")
    assert r.returncode == 0, r.stderr
    assert kl.load_safetensors(out)["image"].shape[0] == 1


@pytest.mark.parametrize("dangling", [False, True])
def test_output_through_a_symlink_is_refused_even_with_force(kl_files, tmp_path, dangling):
    d = kl_files
    target = tmp_path / "target.png"
    if not dangling:
        target.write_bytes(b"precious")
    out = tmp_path / "out.png"
    out.symlink_to(target)
    for extra in ([], ["--force"]):
        r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--out", out, *extra)
        assert r.returncode == 2 and "symbolic link" in r.stderr, r.stderr
    assert out.is_symlink()
    if dangling:
        assert not target.exists()
    else:
        assert target.read_bytes() == b"precious"


def test_multi_frame_output_checks_every_name_before_decoding(kl_files, tmp_path):
    d = kl_files
    second = tmp_path / "img_00001.png"
    second.write_bytes(b"frame from another run")
    r = run("--vae", d / "vae.safetensors", "--latent", d / "two.latent", "--out", tmp_path / "img.png")
    assert r.returncode == 2 and "img_00001.png" in r.stderr and "--force" in r.stderr, r.stderr
    assert not (tmp_path / "img_00000.png").exists()  # refused before anything was written
    assert second.read_bytes() == b"frame from another run"
    r = run("--vae", d / "vae.safetensors", "--latent", d / "two.latent", "--out", tmp_path / "img.png", "--force")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "img_00000.png").read_bytes()[:4] == b"\x89PNG"
    assert second.read_bytes()[:4] == b"\x89PNG"


def test_force_is_documented():
    r = subprocess.run([str(CLI), "decode", "--help"], capture_output=True, text=True, timeout=TIME_LIMIT_S)
    assert "--force" in r.stdout
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `headroom decode"))
    assert "--force" in row


# ------------------------------------------------------------------ items 6 and 10: special files

@pytest.mark.parametrize("which", ["--vae", "--latent"])
def test_a_fifo_is_refused_without_blocking(kl_files, tmp_path, which):
    d = kl_files
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    files = {"--vae": d / "vae.safetensors", "--latent": d / "one.latent"}
    files[which] = fifo
    r = run("--vae", files["--vae"], "--latent", files["--latent"], "--out", tmp_path / "x.png", limit_s=20)
    assert r.returncode == 2 and "regular file" in r.stderr, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_folder_as_vae_is_named_without_garbage(kl_files, tmp_path):
    r = run("--vae", tmp_path, "--latent", kl_files / "one.latent", "--out", tmp_path / "x.png")
    assert r.returncode == 2, r.stderr
    assert "found a folder" in r.stderr
    # Before: "header length <uninitialised> exceeds the file (<-1 as unsigned> bytes)".
    assert "header length" not in r.stderr and "18446744073709551615" not in r.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused(kl_files, tmp_path, device):
    r = run("--vae", device, "--latent", kl_files / "one.latent", "--out", tmp_path / "x.png", limit_s=20)
    assert r.returncode == 2 and "regular file" in r.stderr, r.stderr


# ------------------------------------------------------------------ item 8: huge latents

def test_huge_latent_is_refused_from_its_header(kl_files, tmp_path):
    # 4 x 100000 x 100000 float32 = 160 GB promised by a sparse file. Before: at::empty of 160 GB,
    # a raw allocator error and exit 1.
    lat = sparse_latent(tmp_path / "huge.latent", [1, 4, 100000, 100000])
    r = run("--vae", kl_files / "vae.safetensors", "--latent", lat, "--out", tmp_path / "x.png")
    assert r.returncode == 2, r.stderr
    assert "larger than any ComfyUI makes" in r.stderr and "alloc" not in r.stderr.lower()


def test_a_4d_latent_for_a_wan_vae_is_refused_before_reading(wan_vae, tmp_path):
    # 1 GiB of data behind a rank-4 header: before, read whole (over the memory limit) and then refused.
    lat = sparse_latent(tmp_path / "image.latent", [1, 4, 8192, 8192])
    r = run("--vae", wan_vae, "--latent", lat, "--out", tmp_path / "x.png", limit_s=30)
    assert r.returncode == 2, r.stderr
    assert "4 axes" in r.stderr and "[batch, channels, frames, height, width]" in r.stderr


def test_wrong_channels_are_refused_before_reading(kl_files, tmp_path):
    lat = sparse_latent(tmp_path / "c16.latent", [1, 16, 2048, 8192])  # 1 GiB
    r = run("--vae", kl_files / "vae.safetensors", "--latent", lat, "--out", tmp_path / "x.png", limit_s=30)
    assert r.returncode == 2 and "16 channels" in r.stderr, r.stderr


def test_running_out_of_memory_while_decoding_says_what_to_change(kl_files, tmp_path):
    # A valid latent whose full decode needs gigabytes under the 768 MiB limit: LibTorch's allocator fails
    # mid-decode. Before: its raw message with a C++ stack trace. Now: one line with the fix, exit 1
    # ("does not fit", not "bad input").
    lat = sparse_latent(tmp_path / "big.latent", [1, 4, 1024, 1024])
    r = run("--vae", kl_files / "vae.safetensors", "--latent", lat, "--mode", "full", "--out", tmp_path / "x.png")
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1 and "ran out of memory while decoding" in r.stderr
    assert "--budget" in r.stderr and "Exception raised from" not in r.stderr
    assert not (tmp_path / "x.png").exists()


# ------------------------------------------------------------------ issue 27, item 10: non-finite weights

def _poisoned(sd, key, value):
    sd = dict(sd)
    t = sd[key].clone()
    t.view(-1)[t.numel() // 2] = value
    sd[key] = t
    return sd


def _vae_files():
    """(family, state dict, latent, a decoder weight) for each native decoder, tiny and seeded."""
    import reference_flux2_vae as flux2
    kl_sd = kl.state_dict_of(kl.random_vae(z_channels=4, widths=(32, 32), blocks=1, post_quant=False, seed=1))
    flux2_sd = flux2.comfy_state_dict(flux2.random_flux2_vae(z_channels=32, widths=(32, 32), blocks=1, seed=4))
    flux2_sd = {k: v for k, v in flux2_sd.items() if v.dim() > 0}  # BatchNorm's step counter: not a weight
    return {
        "kl": (kl_sd, torch.randn(1, 4, 3, 3), "decoder.mid.block_1.conv1.weight"),
        "flux2": (flux2_sd, torch.randn(1, 128, 2, 2), "decoder.up.1.block.0.conv2.weight"),
        "wan2.1": (wan.make_state_dict("wan2.1", dim=8, z_dim=4, seed=2), torch.randn(1, 4, 2, 3, 4),
                   "decoder.middle.0.residual.2.weight"),
    }


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
@pytest.mark.parametrize("family", ["kl", "flux2", "wan2.1"])
def test_a_non_finite_weight_is_refused_naming_it(tmp_path, family, value):
    # Before: Wan decoded an all-NaN image and exited 0; KL and FLUX.2 failed after the whole decode with
    # "decode produced NaN/inf values (fp32 overflow is the usual cause)", which names neither the tensor
    # nor the damaged file.
    sd, z, key = _vae_files()[family]
    kl.save_safetensors(tmp_path / "vae.safetensors", _poisoned(sd, key, value))
    kl.save_safetensors(tmp_path / "z.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)})
    out = tmp_path / "img.safetensors"
    r = run("--vae", tmp_path / "vae.safetensors", "--latent", tmp_path / "z.latent", "--out", out)
    assert r.returncode == 2, r.stderr
    assert f"'{key}' contains 1 NaN or infinite value" in r.stderr and "damaged" in r.stderr, r.stderr
    assert not out.exists()
    # The undamaged file decodes (the refusal is the weight's, not the fixture's).
    kl.save_safetensors(tmp_path / "good.safetensors", sd)
    assert run("--vae", tmp_path / "good.safetensors", "--latent", tmp_path / "z.latent", "--out", out).returncode == 0


def test_a_wan_decode_that_overflows_is_an_error_not_a_nan_video(tmp_path):
    # Finite weights whose sums overflow float32: before, a NaN video with exit 0 (KL was already checked).
    sd = dict(wan.make_state_dict("wan2.1", dim=8, z_dim=4, seed=2))
    sd["decoder.conv1.weight"] = sd["decoder.conv1.weight"].sign() * 3e38
    kl.save_safetensors(tmp_path / "vae.safetensors", sd)
    kl.save_safetensors(tmp_path / "z.latent", {"latent_tensor": torch.ones(1, 4, 2, 3, 4),
                                                "latent_format_version_0": torch.zeros(0)})
    out = tmp_path / "img.safetensors"
    r = run("--vae", tmp_path / "vae.safetensors", "--latent", tmp_path / "z.latent", "--out", out)
    assert r.returncode == 2 and "decode produced NaN/inf values" in r.stderr, r.stderr
    assert not out.exists()


# ------------------------------------------------------------------ issue 27, item 10: fast and blend without --budget

@pytest.mark.parametrize("mode", ["fast", "blend"])
@pytest.mark.parametrize("budget", [[], ["--budget", "4GiB"]])
def test_fast_and_blend_decode_a_small_latent_with_or_without_a_budget(kl_files, tmp_path, mode, budget):
    # A 3x3 latent (under the 8 latent px the tile search started from). Before: "budget: 0 B is too small
    # for a fast tile of 8 latent px" without --budget, "4.00 GiB is too small ... needs about 64 MiB" with it.
    d = kl_files
    out = tmp_path / "img.safetensors"
    r = run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--mode", mode, *budget, "--out", out)
    assert r.returncode == 0, r.stderr
    assert "too small" not in r.stderr
    assert f"mode {mode}, 1 tile(s)" in r.stdout
    image = kl.load_safetensors(out)["image"]
    assert image.shape == (1, 6, 6, 3) and torch.isfinite(image).all()  # two levels: 2x upscale
    if mode == "blend":  # one blend tile is one plain decode of the whole latent
        full = tmp_path / "full.safetensors"
        assert run("--vae", d / "vae.safetensors", "--latent", d / "one.latent", "--mode", "full",
                   "--out", full).returncode == 0
        assert (image - kl.load_safetensors(full)["image"]).abs().max().item() < 1e-5


def test_fast_and_blend_without_a_budget_take_the_largest_tile_or_the_one_asked_for(kl_files, tmp_path):
    d = kl_files
    lat = tmp_path / "wide.latent"
    kl.save_safetensors(lat, {"latent_tensor": torch.randn(1, 4, 12, 20), "latent_format_version_0": torch.zeros(0)})
    for mode in ("fast", "blend"):
        r = run("--vae", d / "vae.safetensors", "--latent", lat, "--mode", mode, "--out", tmp_path / f"{mode}.safetensors")
        assert r.returncode == 0 and f"mode {mode}, 1 tile(s)" in r.stdout, r.stderr  # the CPU: no limit
        r = run("--vae", d / "vae.safetensors", "--latent", lat, "--mode", mode, "--tile", "16",
                "--out", tmp_path / f"{mode}-tiled.safetensors")
        assert r.returncode == 0 and f"mode {mode}, 6 tile(s)" in r.stdout, r.stderr  # 8-px latent tiles: 2 x 3


def test_the_default_budget_is_documented():
    r = subprocess.run([str(CLI), "decode", "--help"], capture_output=True, text=True, timeout=TIME_LIMIT_S)
    text = " ".join(r.stdout.split())
    assert "Without it: the free VRAM on CUDA" in text and "no limit on the CPU" in text
    assert "Every mode (exact, fast, blend) takes the largest tile" in text
