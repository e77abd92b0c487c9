"""Issue 26, MiniMax H3: the official H3 and FastH3 templates are read with their own transformer (the 'pruned'
curve-form H3 DiT, 20.1 B), the Qwen3-VL-32B encoder in nvfp4_awq and the int8_convrot video VAE, at the size and
length the template records; the audio VAE is not taken for the video VAE, and a Qwen3-VL of another size is not
taken for H3's encoder."""
import pytest

from family_templates import SKIP, plan

pytestmark = SKIP

H3_TEMPLATES = {
    "video_minimax_h3_t2v": "minimax-h3-fl2va",
    "video_minimax_h3_i2v": "minimax-h3-fl2va",
    "video_minimax_h3_r2v": "minimax-h3-ref2va",
    "video_fastvideo_fasth3_t2v": "fasth3-8step",
    "video_fasth3_ominiref_r2v": "fasth3-omniref-8step",
}


@pytest.mark.parametrize("name,model", sorted(H3_TEMPLATES.items()))
def test_h3_templates_are_read_with_their_own_models(name, model):
    a = plan(name)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == (model, "int8_convrot")
    assert [(t["model"], t["precision"]) for t in job["text_encoders"]] == [("qwen3vl-32b-minimax-h3", "nvfp4_awq")]
    assert (job["vae"]["model"], job["vae"]["precision"]) == ("minimax-h3-video-vae", "int8_convrot")
    assert a["workflow"]["size_known"]


def test_the_h3_video_is_a_video_at_the_templates_size():
    job = plan("video_minimax_h3_r2v")["job"]
    # MiniMaxH3ReferenceToVideo stores 1344 x 768, but its width and height are linked to a ResolutionSelector
    # (16:9, 0.4 MP, multiple 32), which ComfyUI runs: 16 x sqrt(0.4 x 1024^2 / 144) = 863.5 -> 864, 9 x 53.97 =
    # 485.7 -> 480. The length, 124 frames (about 5 s at 24 fps), is the node's own.
    assert (job["width"], job["height"], job["frames"]) == (864, 480, 124)


def test_the_h3_image_template_is_one_frame():
    a = plan("image_minimax_h3_t2i")
    job = a["job"]
    assert job["diffusion"]["model"] == "minimax-h3-fl2va"
    assert job["frames"] == 1
    assert job["vae"]["precision"] == "fp16"


def test_h3_weighs_its_pruned_size_not_the_33b_card():
    a = plan("video_minimax_h3_t2v", 48)
    weights = next(s for s in a["stages"] if s["name"] == "sample")["breakdown"]["weights:minimax-h3-fl2va"]
    # int8_convrot at one byte per weight: 20.1 B, well under the 33 B of the full-AdaLN form.
    assert 19e9 < weights < 22e9


def test_the_audio_vae_is_not_taken_for_the_video_vae():
    loaders = plan("video_minimax_h3_r2v")["workflow"]["loaders"]
    by_file = {l["file"]: l["model"] for l in loaders if l["role"] == "vae"}
    assert by_file["minimax_h3_video_vae_int8_convrot.safetensors"] == "minimax-h3-video-vae"
    assert by_file["minimax_h3_audio_vae_fp32.safetensors"] is None


def test_a_qwen3_vl_of_another_size_is_not_h3s_encoder(tmp_path):
    # The same template with the 8B Qwen3-VL file in its CLIPLoader: not read as the 32B H3 encoder.
    import json
    import subprocess
    from family_templates import BINARY, FOLDER
    w = json.loads((FOLDER / "video_minimax_h3_t2v.json").read_text())
    text = json.dumps(w).replace("qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors", "qwen3vl_8b_fp8_scaled.safetensors")
    path = tmp_path / "h3_with_8b.json"
    path.write_text(text)
    p = subprocess.run([str(BINARY), "plan", str(path), "--vram", "24", "--json"], capture_output=True, text=True,
                       timeout=120)
    a = json.loads(p.stdout)
    encoders = [l["model"] for l in a["workflow"]["loaders"] if l["role"] == "text_encoder"]
    assert encoders and "qwen3vl-32b-minimax-h3" not in encoders
