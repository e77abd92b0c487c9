"""Issue 26, HunyuanVideo 1.5: the official 720p templates are read with their own transformer (54 double blocks of
2048, 8.3 B), both text encoders (Qwen2.5-VL-7B and the byT5 glyph encoder), the 1.5 VAE and the size and length
the template records; the bypassed 1080p SR pass does not count; HunyuanVideo 1.0 files are not taken for 1.5, and the 1.5
VAE is not taken for a KL or Wan VAE."""
import json
import subprocess

import pytest

from family_templates import BINARY, FOLDER, SKIP, plan

pytestmark = SKIP

TEMPLATES = ["video_hunyuan_video_1.5_720p_t2v", "video_hunyuan_video_1.5_720p_i2v"]


@pytest.mark.parametrize("name", TEMPLATES)
def test_the_templates_are_read_with_their_own_models(name):
    a = plan(name)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert job["diffusion"]["model"].startswith("hunyuan-video-1.5-")
    assert [t["model"] for t in job["text_encoders"]] == ["qwen2.5-vl-7b", "byt5-small-glyphxl"]
    assert job["vae"]["model"] == "hunyuan-video-1.5-vae"
    assert a["workflow"]["size_known"]
    assert job["diffusion"]["precision"] == "fp16"


def test_the_templates_size_is_read_and_the_bypassed_sr_pass_does_not_count():
    job = plan("video_hunyuan_video_1.5_720p_t2v")["job"]
    # EmptyHunyuanVideo15Latent records 1280 x 720 x 121; the 1080p SR pass (its UNETLoader, upscaler and samplers)
    # ships bypassed, so it neither loads the SR model nor enlarges the latent.
    assert (job["width"], job["height"], job["frames"]) == (1280, 720, 121)
    assert job["diffusion"]["model"] == "hunyuan-video-1.5-t2v"


def test_the_i2v_model_is_the_i2v_file():
    loaders = plan("video_hunyuan_video_1.5_720p_i2v")["workflow"]["loaders"]
    by_file = {l["file"]: l["model"] for l in loaders if l["role"] == "diffusion"}
    assert by_file["hunyuanvideo1.5_720p_i2v_fp16.safetensors"] == "hunyuan-video-1.5-i2v"


def test_the_transformer_weighs_its_fp16_file():
    a = plan("video_hunyuan_video_1.5_720p_t2v", 48)
    sample = next(s for s in a["stages"] if s["name"] == "sample")
    weights = [v for k, v in sample["breakdown"].items() if k.startswith("weights:hunyuan-video-1.5")]
    # fp16, two bytes a weight: 8.3 B is 16.6 GB, the 15.51 GiB the templates list.
    assert weights and 16e9 < max(weights) < 17.5e9


def _with(tmp_path, old, new):
    w = json.loads((FOLDER / "video_hunyuan_video_1.5_720p_t2v.json").read_text())
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(w).replace(old, new))
    p = subprocess.run([str(BINARY), "plan", str(path), "--vram", "24", "--json"], capture_output=True, text=True,
                       timeout=120)
    return json.loads(p.stdout)


def test_a_hunyuan_video_1_0_file_is_not_taken_for_1_5(tmp_path):
    a = _with(tmp_path, "hunyuanvideo1.5_720p_t2v_fp16.safetensors", "hunyuan_video_t2v_720p_bf16.safetensors")
    by_file = {l["file"]: l["model"] for l in a["workflow"]["loaders"] if l["role"] == "diffusion"}
    # 1.0 is a catalog model of its own now (tests/python/test_hunyuan_video_kandinsky5_family.py): never a 1.5 entry.
    assert by_file["hunyuan_video_t2v_720p_bf16.safetensors"] == "hunyuan-video-t2v-720p"


def test_a_plain_t5_is_not_the_glyph_encoder(tmp_path):
    a = _with(tmp_path, "byt5_small_glyphxl_fp16.safetensors", "t5xxl_fp16.safetensors")
    encoders = [l["model"] for l in a["workflow"]["loaders"] if l["role"] == "text_encoder"]
    assert "byt5-small-glyphxl" not in encoders and "t5-xxl" in encoders
