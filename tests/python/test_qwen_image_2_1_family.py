"""Issue 26, Qwen-Image 2.1: its official templates are read with their own models (the 7.1 B single-stream
transformer, base or Turbo, in the int8_convrot files; the Qwen3-VL-8B encoder; the 64-channel 16x RGBA
VAE, which Headroom does not decode natively) and their recorded shape; a file of the near Qwen-Image (1.x)
family is never taken for 2.1, nor a 2.1 file for 1.x."""
import pytest

from family_templates import SKIP, plan as _plan

pytestmark = SKIP


@pytest.mark.parametrize("template, model", [
    ("image_qwen_image_2_1_t2i", "qwen-image-2.1"),
    ("image_qwen_image_2_1_turbo_t2i", "qwen-image-2.1-turbo"),
])
def test_a_qwen_image_2_1_template_is_read_with_its_own_models_and_shape(template, model):
    a = _plan(template)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert job["diffusion"]["model"] == model and job["diffusion"]["precision"] == "int8_convrot"
    assert "qwen3vl-8b" in [t["model"] for t in job["text_encoders"]]
    assert job["vae"]["model"] == "qwen-image-2.1-vae"
    assert a["workflow"]["size_known"]
    assert (job["width"], job["height"]) == (1024, 1024)


def test_the_2_1_transformer_loads_about_a_third_of_qwen_image():
    new, old = _plan("image_qwen_image_2_1_t2i"), _plan("image_qwen_image")
    full_load = lambda p: next(s for s in p["stages"] if s["name"] == "sample")["full_load_bytes"]
    # 7.1 B in int8 against 20.4 B in fp8: the sample stage's weights are about a third.
    assert full_load(new) < 0.5 * full_load(old)


def test_a_qwen_image_file_is_not_taken_for_2_1_and_back():
    old = _plan("image_qwen_image")
    assert old["job"]["diffusion"]["model"] == "qwen-image"
    assert old["job"]["vae"]["model"] == "wan2.1-vae"
    new = _plan("image_qwen_image_2_1_t2i")
    assert not new["job"]["diffusion"]["model"].startswith("qwen-image-edit")
    assert new["job"]["diffusion"]["model"] != "qwen-image"
