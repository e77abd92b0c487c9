"""`headroom-decode` (what `headroom decode` runs) on a Wan VAE file and a Save Latent file."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

import reference_wan_vae as ref
from reference_kl_vae import load_safetensors, save_safetensors

BUILD = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = Path(__file__).resolve().parents[2] / BUILD
CLI = BUILD / "headroom-decode"
pytestmark = pytest.mark.skipif(not CLI.exists(), reason="headroom-decode is not built")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("wan")
    sd = ref.make_state_dict("wan2.1", dim=8, z_dim=4, seed=2)
    save_safetensors(d / "vae.safetensors", sd)
    z = torch.randn(1, 4, 2, 4, 5, generator=torch.Generator().manual_seed(3))
    # as ComfyUI's Save Latent writes it
    save_safetensors(d / "clip.latent", {"latent_tensor": z, "latent_format_version_0": torch.tensor([])})
    return d, sd, z


def run(*args):
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_cli_writes_the_image_tensor(files):
    d, sd, z = files
    res = run("--vae", d / "vae.safetensors", "--latent", d / "clip.latent", "--mode", "exact", "--tile", "24",
              "--out", d / "out.safetensors")
    assert res.returncode == 0, res.stderr
    image = load_safetensors(d / "out.safetensors")["image"]
    assert image.shape == (5, 32, 40, 3)
    assert (image - ref.decode_image(sd, z)).abs().max().item() < 1e-5


def test_cli_writes_one_png_per_frame(files):
    d, _, _ = files
    res = run("--vae", d / "vae.safetensors", "--latent", d / "clip.latent", "--out", d / "frame.png")
    assert res.returncode == 0, res.stderr
    pngs = sorted(p.name for p in d.glob("frame_*.png"))
    assert len(pngs) == 5


def test_cli_rejects_a_latent_of_the_wrong_model(files):
    d, _, _ = files
    save_safetensors(d / "bad.latent", {"latent_tensor": torch.randn(1, 16, 2, 4, 4),
                                        "latent_format_version_0": torch.tensor([])})
    res = run("--vae", d / "vae.safetensors", "--latent", d / "bad.latent", "--out", d / "bad.safetensors")
    assert res.returncode != 0
    assert "16 channels" in res.stderr and "Traceback" not in res.stderr
