"""Issue 26, HiDream: the official I1 (dev, fast, full) and E1 (1.1, full) templates are read with their own
17 B MoE transformer, QuadrupleCLIPLoader's four encoders (CLIP-L, CLIP-G, T5-XXL and Llama 3.1 8B) and the
FLUX.1 VAE at their recorded size; E1's input image doubles the image tokens (it joins the latent's width);
HiDream-O1 (pixel space) and HunyuanVideo's LLaVA-Llama-3 stay out of these entries."""
import pytest

from family_templates import SKIP, plan

pytestmark = SKIP

ENCODERS = {"clip-l", "clip-g", "t5-xxl", "llama-3.1-8b"}


@pytest.mark.parametrize("template, model, precision, side", [
    ("hidream_i1_dev", "hidream-i1", "fp8_e4m3fn", 1024),
    ("hidream_i1_fast", "hidream-i1", "fp8_e4m3fn", 1024),
    ("hidream_i1_full", "hidream-i1", "fp8_e4m3fn", 1024),
    ("hidream_e1_1", "hidream-e1", "fp8_e4m3fn", 1024),  # the UNETLoader's weight_dtype fp8_e4m3fn_fast
    ("hidream_e1_full", "hidream-e1", "bf16", 768),      # ImageScale 768 x 768 -> InstructPixToPixConditioning
])
def test_a_hidream_template_is_read_with_its_own_models_and_size(template, model, precision, side):
    a = plan(template)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == (model, precision)
    assert {t["model"] for t in job["text_encoders"]} == ENCODERS
    assert job["vae"]["model"] == "flux-vae"
    assert a["workflow"]["size_known"] and (job["width"], job["height"]) == (side, side)


def _sample(a):
    return next(s for s in a["stages"] if s["name"] == "sample")


def test_the_llama_encoder_weighs_what_an_8b_model_weighs_in_fp8():
    a = plan("hidream_i1_dev")
    assert any(t["model"] == "llama-3.1-8b" and t["precision"] == "fp8_scaled" for t in a["job"]["text_encoders"])
    encode = next(s for s in a["stages"] if s["name"] == "text_encode")
    assert encode["full_load_bytes"] > 8.0e9  # T5-XXL and Llama in fp8 plus the two CLIPs


def test_e1_samples_twice_the_image_tokens_of_i1_at_one_size():
    i1, e1 = plan("hidream_i1_full", 80), plan("hidream_e1_1", 80)
    tokens = lambda a: int(next(n for n in _sample(a)["notes"] if "tokens per sequence" in n).split()[0])
    text = 384
    assert tokens(e1) - text == 2 * (tokens(i1) - text)


def test_hidream_o1_and_hunyuan_llava_are_not_taken_for_hidream_or_llama():
    # HiDream-O1 is its own pixel-space entry (test_ernie_ideogram4_hidream_o1_families.py), never I1 or E1.
    o1 = plan("image_hidream_o1")
    assert all(l["model"] not in ("hidream-i1", "hidream-e1") for l in o1["workflow"]["loaders"])
    assert o1["job"]["diffusion"]["model"] == "hidream-o1-image"
    hunyuan = plan("hunyuan_video_text_to_video")
    assert all(l["model"] != "llama-3.1-8b" for l in hunyuan["workflow"]["loaders"])
