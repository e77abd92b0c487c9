"""The official LTX-2 / LTX-2.3 templates (issue 26, part B) are read with their own models and shapes: the
19B or 22B audio-video checkpoint, the Gemma 3 12B encoder of LTXAVTextEncoderLoader, the checkpoint's
video VAE and the EmptyLTXVLatentVideo size; the Lightricks files of other lines (LTXV 0.9.x, LTX-2.5)
are their own entries, never taken for a near family."""
import json
import subprocess

import pytest

from conftest import REPO
import importlib.util

_spec = importlib.util.spec_from_file_location("templates_table", REPO / "scripts" / "templates_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)

FOLDER = table.templates_dir()
BINARY = table.headroom_binary()
pytestmark = pytest.mark.skipif(FOLDER is None or not BINARY.exists(),
                                reason="needs the pinned templates package and a built headroom")


def plan(name, vram=24):
    out = subprocess.run([str(BINARY), "plan", str(FOLDER / name), "--vram", str(vram), "--json"],
                         capture_output=True, text=True)
    return out.returncode, json.loads(out.stdout) if out.stdout.strip().startswith("{") else out


@pytest.mark.parametrize("name, model, frames, first", [
    # LTX-2's latent takes GetImageSize of EmptyImage 1280x720 halved by ImageScaleBy: 640x360, not the
    # 768x512 the latent node stores.
    ("video_ltx2_t2v.json", "ltx2-19b", 121, (640, 360)),
    ("video_ltx2_3_t2v.json", "ltx2.3-22b", 97, (768, 512)),
    ("video_ltx2_3_i2v.json", "ltx2.3-22b", 97, (768, 512)),
])
def test_an_ltx2_template_runs_its_own_models_and_shape(name, model, frames, first):
    rc, p = plan(name)
    assert rc in (0, 1), p
    job = p["job"]
    assert job["diffusion"]["model"] == model
    assert job["diffusion"]["precision"] == "fp8_e4m3fn"  # the official -fp8 checkpoints
    assert [t["model"] for t in job["text_encoders"]] == ["gemma3-12b"]
    assert job["text_encoders"][0]["precision"] == "nvfp4"  # gemma_3_12B_it_fp4_mixed
    assert job["vae"]["model"] == "ltx2-vae"
    # EmptyLTXVLatentVideo at `first`, then LTXVLatentUpsampler (x2): the second sampler runs at twice that,
    # and the VAE decodes its latent. The job is the binding sampler's (issue 19): either pass, the decode
    # is of the enlarged latent.
    second = (first[0] * 2, first[1] * 2)
    passes = sorted((s["width"], s["height"], s["frames"]) for s in p["samplers"])
    assert passes == [(*first, frames), (*second, frames)]
    binding = next(s for s in p["samplers"] if s["binding"])
    assert (job["width"], job["height"], job["frames"]) == (binding["width"], binding["height"], frames)
    assert (job["width"] * job["decode_scale"], job["height"] * job["decode_scale"]) == second
    stages = [s["name"] for s in p["stages"]]
    assert {"text_encode", "sample", "vae_decode"} <= set(stages)
    # The audio stage is not estimated yet, and the plan says so; the upsampler's size is.
    notes = " ".join(job["notes"])
    assert "audio" in notes
    assert f"latent upsampler enlarges the {first[0]}x{first[1]} latent" in notes


def test_ltx2_sample_tokens_follow_the_32x_8x_latent():
    # 1536x1024x97 -> 13 latent frames of 48 x 32 with patch 1: 19968 tokens (comfy LTXV latent [B,128,13,32,48]).
    rc, p = plan("video_ltx2_3_t2v.json")
    sample = next(s for s in p["stages"] if s["name"] == "sample")
    assert any("19968 tokens" in n for n in sample["notes"])


def test_a_single_stage_ltx2_template_keeps_its_latent_size():
    # The IC-LoRA template samples once, with no latent upsampler: its EmptyLTXVLatentVideo size stands.
    rc, p = plan("video_ltx2_3_ic_lora.json")
    assert p["job"]["diffusion"]["model"] == "ltx2.3-22b"
    assert not any("latent upsampler" in n for n in p["job"]["notes"])


@pytest.mark.parametrize("name, own", [("ltxv_text_to_video.json", "ltx-video-2b"),
                                       ("video_ltx2_5_t2v.json", "ltx2.5-22b")])
def test_other_lightricks_lines_are_not_taken_for_ltx2(name, own):
    # LTX-Video 0.9 and LTX-2.5 are their own catalog entries, never LTX-2 or LTX-2.3.
    rc, p = plan(name)
    job = p["job"] if isinstance(p, dict) else {}
    model = (job.get("diffusion") or {}).get("model", "")
    assert model == own, model


@pytest.mark.parametrize("bad", ["two", 1, 0.5, 100])
def test_a_bad_latent_scale_is_refused_naming_the_field(tmp_path, bad):
    nodes = json.loads((REPO / "native" / "data" / "comfy_nodes.json").read_text())
    nodes["nodes"]["LTXVLatentUpsampler"]["latent_scale"] = bad
    (tmp_path / "comfy_nodes.json").write_text(json.dumps(nodes))
    out = subprocess.run([str(BINARY), "plan", str(FOLDER / "video_ltx2_3_t2v.json"), "--vram", "24"],
                         capture_output=True, text=True, env={**__import__("os").environ, "HEADROOM_DATA_DIR": str(tmp_path)})
    assert out.returncode == 2, out.stdout + out.stderr
    message = out.stdout + out.stderr
    assert "LTXVLatentUpsampler" in message and "latent_scale" in message and "expected a factor above 1" in message
