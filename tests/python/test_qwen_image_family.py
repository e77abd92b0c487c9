"""Issue 26, Qwen-Image: the official templates of the family are read with their own models (the 20B
transformer per release, the Qwen2.5-VL-7B encoder, the Qwen-Image VAE as Wan 2.1), their recorded shape and
their edit reference images; a near family whose transformer differs (Layered) stays unknown, never taken
for a Qwen-Image release (Qwen-Image 2.1 has its own entries: test_qwen_image_2_1_family.py)."""
import pytest

from family_templates import SKIP, plan as _plan

pytestmark = SKIP


@pytest.mark.parametrize("template, model, precision, width, height, refs", [
    ("image_qwen_image", "qwen-image", "fp8_e4m3fn", 1328, 1328, 0),
    ("image_qwen_Image_2512", "qwen-image-2512", "fp8_e4m3fn", None, None, 0),
    ("image_qwen_image_edit", "qwen-image-edit", "fp8_e4m3fn", None, None, None),
    ("image_qwen_image_edit_2509", "qwen-image-edit-2509", "fp8_e4m3fn", 1328, 800, None),
    ("image_qwen_image_edit_2511", "qwen-image-edit-2511", "fp8mixed", 1328, 800, None),
])
def test_a_qwen_image_template_is_read_with_its_own_models_and_shape(template, model, precision, width, height,
                                                                        refs):
    a = _plan(template)
    job = a["job"]
    if template == "image_qwen_image_edit":
        # Its subgraph VAE-encodes the LoadImage itself (the ImageScaleToTotalPixels beside it feeds nothing):
        # the size is the loaded image's, unknown, and the image is named.
        assert a["verdict"] == "unknown" and a["not_covered"]["node_type"] == "LoadImage", a.get("reason")
    else:
        assert a["verdict"] != "unknown", a.get("reason")
    assert job["diffusion"]["model"] == model and job["diffusion"]["precision"] == precision
    assert [t["model"] for t in job["text_encoders"]] == ["qwen2.5-vl-7b"]
    assert job["vae"]["model"] == "wan2.1-vae"
    # image_qwen_image_edit samples the VAE-encoded loaded image: its size is not recorded.
    assert a["workflow"]["size_known"] == (template != "image_qwen_image_edit")
    if width:
        assert (job["width"], job["height"]) == (width, height)
    if refs is not None:
        assert job["reference_images"] == refs
    if "edit" in model:
        # TextEncodeQwenImageEdit(Plus) VAE-encodes its images as reference latents: they join the sequence.
        assert job["reference_images"] >= 1
        assert any(s["name"] == "vae_encode" for s in a["stages"]) or job["reference_images"] >= 1


def test_the_edit_reference_images_add_to_the_sampling_peak():
    a, b = _plan("image_qwen_image_edit_2509"), _plan("image_qwen_image")
    sample = lambda plan: max(s["peak_bytes"] for s in plan["stages"] if s["name"] == "sample")
    # Edit at 1328x800 with reference tokens vs base at 1328x1328 without: the edit's image sequence is
    # 1328x800 plus the references, so its activations are not those of the smaller image alone.
    assert a["job"]["reference_images"] >= 1 and sample(a) > 0 and sample(b) > 0


@pytest.mark.parametrize("template, file_part", [
    ("image_qwen_image_layered", "qwen_image_layered"),
])
def test_a_near_family_is_its_own_entry_not_a_qwen_image_release(template, file_part):
    # Qwen-Image-Layered shares the Qwen-Image DiT but samples layers + 1 frames: its own catalog entry, never a
    # Qwen-Image release.
    a = _plan(template)
    diffusion = [l for l in a["workflow"]["loaders"] if l["role"] == "diffusion" and file_part in l["file"]]
    assert diffusion and all(l["model"] == "qwen-image-layered" for l in diffusion)
