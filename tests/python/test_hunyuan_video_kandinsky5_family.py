"""Issue 26, HunyuanVideo 1.0 and Kandinsky 5 Lite: the official templates are read with their own DiTs
(HunyuanVideo 1.0's 20 + 40 blocks of 3072; Kandinsky 5 Video Lite's 32 visual blocks of 1792, Image Lite's 50 of
2560), their text encoders (CLIP-L with LLaVA-Llama-3-8B; Qwen2.5-VL-7B with CLIP-L), their VAEs (the HunyuanVideo VAE
for video, FLUX.1's for the image model) and the size their latent nodes record; Kandinsky 5 Pro and near
HunyuanVideo files stay unknown."""
import json
import subprocess

import pytest

from family_templates import BINARY, FOLDER, SKIP, plan

pytestmark = SKIP

TEMPLATES = {
    "hunyuan_video_text_to_video": ("hunyuan-video-t2v-720p", ["clip-l", "llava-llama3-8b"], (848, 480, 73)),
    "video_kandinsky5_t2v": ("kandinsky5-lite-t2v", ["qwen2.5-vl-7b", "clip-l"], (768, 512, 121)),
    "video_kandinsky5_i2v": ("kandinsky5-lite-i2v", ["qwen2.5-vl-7b", "clip-l"], (768, 512, 121)),
    "image_kandinsky5_t2i": ("kandinsky5-lite-t2i", ["qwen2.5-vl-7b", "clip-l"], (1024, 1024, 1)),
}
VAES = {"image_kandinsky5_t2i": "flux-vae"}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_templates_are_read_with_their_own_models_and_size(name):
    model, encoders, size = TEMPLATES[name]
    a = plan(name)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert job["diffusion"]["model"] == model
    assert [t["model"] for t in job["text_encoders"]] == encoders
    assert job["vae"]["model"] == VAES.get(name, "hunyuan-video-vae")
    assert a["workflow"]["size_known"]
    assert (job["width"], job["height"], job["frames"]) == size


def _weights(answer, prefix):
    sample = next(s for s in answer["stages"] if s["name"] == "sample")
    return [v for k, v in sample["breakdown"].items() if k.startswith("weights:" + prefix)]


def test_the_dits_weigh_their_bf16_files():
    # HunyuanVideo 1.0: 12.8 B in bf16 is the 25.6 GB file; Kandinsky 5 Lite: 2.0 B in bf16 is about 4 GB.
    hv = _weights(plan("hunyuan_video_text_to_video", 48), "hunyuan-video-t2v-720p")
    assert hv and 25.0e9 < max(hv) < 26.5e9
    k5 = _weights(plan("video_kandinsky5_t2v", 48), "kandinsky5-lite-t2v")
    assert k5 and 3.8e9 < max(k5) < 4.3e9
    # Image Lite: 6.02 B in bf16, the ~11.2 GiB of kandinsky5lite_t2i.safetensors.
    k5i = _weights(plan("image_kandinsky5_t2i", 48), "kandinsky5-lite-t2i")
    assert k5i and 11.8e9 < max(k5i) < 12.3e9


def _with(tmp_path, template, old, new):
    w = (FOLDER / f"{template}.json").read_text()
    assert old in w
    path = tmp_path / "changed.json"
    path.write_text(w.replace(old, new))
    p = subprocess.run([str(BINARY), "plan", str(path), "--vram", "24", "--json"], capture_output=True, text=True,
                       timeout=120)
    return json.loads(p.stdout)


def _models(answer, role):
    return {l["file"]: l["model"] for l in answer["workflow"]["loaders"] if l["role"] == role}


def test_kandinsky5_pro_is_not_the_lite_dit(tmp_path):
    a = _with(tmp_path, "video_kandinsky5_t2v", "kandinsky5lite_t2v_sft_5s.safetensors", "kandinsky5pro_t2v_sft_5s.safetensors")
    assert not _models(a, "diffusion")["kandinsky5pro_t2v_sft_5s.safetensors"]
    assert a["verdict"] == "unknown"


def test_hunyuan_video_i2v_and_1_5_files_are_not_the_1_0_t2v(tmp_path):
    a = _with(tmp_path, "hunyuan_video_text_to_video", "hunyuan_video_t2v_720p_bf16.safetensors",
              "hunyuan_video_image_to_video_720p_bf16.safetensors")
    assert not _models(a, "diffusion")["hunyuan_video_image_to_video_720p_bf16.safetensors"]
    b = _with(tmp_path, "hunyuan_video_text_to_video", "hunyuan_video_vae_bf16.safetensors",
              "hunyuanvideo15_vae_fp16.safetensors")
    assert _models(b, "vae")["hunyuanvideo15_vae_fp16.safetensors"] == "hunyuan-video-1.5-vae"


def test_a_llama_3_1_file_is_not_llava_llama3(tmp_path):
    a = _with(tmp_path, "hunyuan_video_text_to_video", "llava_llama3_fp8_scaled.safetensors",
              "llama_3.1_8b_instruct_fp8_scaled.safetensors")
    assert "llava-llama3-8b" not in _models(a, "text_encoder").values()
