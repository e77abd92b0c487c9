"""Issue 26, Z-Image: the official Z-Image and Z-Image Turbo templates (bf16 and int8_convrot) are read with
their own transformer, Qwen3-4B and the FLUX.1 VAE at their recorded size; another Lumina-2-architecture
model (NetaYume Lumina, NewBie) is not taken for Z-Image."""
import pytest

from family_templates import SKIP, plan as _plan

pytestmark = SKIP


@pytest.mark.parametrize("template, model, precision", [
    ("image_z_image", "z-image", "bf16"),
    ("image_z_image_int8", "z-image", "int8_convrot"),
    ("image_z_image_turbo", "z-image-turbo", "bf16"),
    ("image_z_image_turbo_int8", "z-image-turbo", "int8_convrot"),
])
def test_a_z_image_template_is_read_with_its_own_models(template, model, precision):
    a = _plan(template)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == (model, precision)
    assert [t["model"] for t in job["text_encoders"]] == ["qwen3-4b"]
    assert job["vae"]["model"] == "flux-vae"
    assert a["workflow"]["size_known"]


def test_int8_weights_cost_less_than_bf16():
    bf16, int8 = _plan("image_z_image_turbo", 8), _plan("image_z_image_turbo_int8", 8)
    weights = lambda plan: next(s for s in plan["stages"] if s["name"] == "sample")["full_load_bytes"]
    assert weights(int8) < weights(bf16)


@pytest.mark.parametrize("template", ["image_netayume_lumina_t2i", "image_newbieimage_exp0_1-t2i"])
def test_another_lumina2_model_is_not_taken_for_z_image(template):
    a = _plan(template)
    for l in a["workflow"]["loaders"]:
        if l["role"] in ("diffusion", "checkpoint"):
            assert l["model"] is None or not l["model"].startswith("z-image"), l
