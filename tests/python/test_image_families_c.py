"""Issue 26, image families part 2: the official LongCat-Image templates (text-to-image and edit) are read with
their own diffusion model, the Qwen2.5-VL-7B encoder and the FLUX.1 VAE at the size they record, the edit's input
image joining the sequence as tokens of its own; the NetaYume Lumina checkpoint is read as the Lumina-Image-2.0 DiT
with the Gemma-2-2B encoder and FLUX.1 VAE it bundles; Ovis-Image as its 6 + 27 block SwiGLU Flux DiT on the Qwen3
language model of Ovis 2.5; JoyAI-Image-Edit as its 40-block dual-stream DiT whose input image joins the sequence; the
weights are what the published sizes say."""
import pytest

from family_templates import SKIP, assert_read_with, plan, sequence_tokens, weights

pytestmark = SKIP


@pytest.mark.parametrize("template, model, precision, encoders, vae, shape, verdict", [
    ("image_longcat_text_to_image", "longcat-image", "bf16", ["qwen2.5-vl-7b"], "flux-vae", (1024, 1024, 1), "fits"),
    # LoadImage -> ImageScaleToTotalPixels (1 MP): sized as the 1024 x 1024 square of that pixel count.
    ("image_longcat_image_edit", "longcat-image-edit", "bf16", ["qwen2.5-vl-7b"], "flux-vae", (1024, 1024, 1),
     "fits"),
    # CheckpointLoaderSimple: the all-in-one file bundles the DiT, Gemma-2-2B and the FLUX.1 VAE.
    ("image_netayume_lumina_t2i", "netayume-lumina-v3.5", "", ["gemma2-2b"], "flux-vae", (1024, 1024, 1), "fits"),
    ("image_ovis_text_to_image", "ovis-image-7b", "bf16", ["ovis2.5-2b"], "flux-vae", (1024, 1024, 1), "fits"),
    ("image_joyai_image_edit", "joyai-image-edit", "int8_convrot", ["qwen3vl-8b"], "wan2.1-vae", (1024, 1024, 1),
     "fits"),
])
def test_a_template_is_read_with_its_own_models_and_size(template, model, precision, encoders, vae, shape, verdict):
    a = plan(template)
    assert a["verdict"] == verdict, a.get("reason")
    assert_read_with(a, model, precision, encoders, vae, shape)


def test_longcat_text_joins_the_sequence_and_the_edit_adds_its_input_image():
    # 1024 x 1024 on the /8 FLUX.1 latent with 2 x 2 patches = 64 x 64 image tokens, plus 512 Qwen2.5-VL tokens;
    # the edit's input image adds its own tokens per reference (the two TextEncodeQwenImageEdit nodes each count one).
    image = (1024 // 16) ** 2
    t2i, edit = plan("image_longcat_text_to_image", 80), plan("image_longcat_image_edit", 80)
    assert sequence_tokens(t2i) == image + 512
    assert edit["job"]["reference_images"] >= 1
    assert sequence_tokens(edit) == image * (1 + edit["job"]["reference_images"]) + 512


def test_the_weights_are_what_the_published_sizes_say():
    # LongCat-Image: the 6B transformer is 12.54 GB in bf16 on disk.
    assert 12.4e9 < weights(plan("image_longcat_text_to_image", 80), "longcat-image") < 12.7e9


def test_netayume_caption_joins_the_sequence():
    # One joint sequence [caption | image]: 64 x 64 image tokens and the 512 Gemma tokens.
    assert sequence_tokens(plan("image_netayume_lumina_t2i", 80)) == (1024 // 16) ** 2 + 512


def test_netayume_weights_are_the_lumina_2_dit_and_gemma_2_2b():
    # Lumina-Image-2.0's 2.6B DiT and Gemma-2-2B's 2.61B (2,614,341,888 in its config's count), both bf16.
    a = plan("image_netayume_lumina_t2i", 80)
    assert 5.1e9 < weights(a, "netayume") < 5.3e9
    encode = next(s for s in a["stages"] if s["name"] == "text_encode")
    assert encode["breakdown"]["weights:gemma2-2b"] == 2 * 2614341888


def test_ovis_weights_are_the_7b_dit_and_the_qwen3_1_7b_language_model():
    # The report's 7B MMDiT in bf16 (7.37e9 weights by count); the text encoder is Ovis 2.5's Qwen3-1.7B.
    a = plan("image_ovis_text_to_image", 80)
    assert 14.0e9 < weights(a, "ovis-image") < 15.0e9
    encode = next(s for s in a["stages"] if s["name"] == "text_encode")
    assert encode["breakdown"]["weights:ovis2.5-2b"] == 2 * 1720574976
    assert sequence_tokens(a) == (1024 // 16) ** 2 + 512


def test_joyai_edit_input_image_joins_the_sequence_and_its_weights_are_the_16b_dit():
    # TextEncodeJoyImageEdit gives the model its input image as a reference latent, patchified into tokens of its
    # own: 64 x 64 tokens per reference beside the 64 x 64 of the image and the 1280 of Qwen3-VL-8B.
    a = plan("image_joyai_image_edit", 80)
    image = (1024 // 16) ** 2
    assert a["job"]["reference_images"] >= 1
    assert sequence_tokens(a) == image * (1 + a["job"]["reference_images"]) + 1280
    # The model card's 16B MMDiT (16.26e9 weights by count) at one byte per weight in int8_convrot.
    assert 16.0e9 < weights(a, "joyai") < 16.6e9


def test_firered_edit_is_read_as_its_own_model_and_sized_as_the_pixel_count_of_its_resize():
    # Qwen-Image's DiT under its own name; its latent follows ResizeImageMaskNode "scale total pixels" over a
    # loaded image: the pixel count is known, not the aspect, so it is sized as the square of that count and the
    # notes say so (size_origin pixel_count) rather than defaulting a size.
    a = plan("image_firered_image_edit1_1")
    loaders = {l["role"]: l["model"] for l in a["workflow"]["loaders"]}
    assert loaders["diffusion"] == "firered-image-edit-1.1"
    assert a["verdict"] != "unknown" and a["workflow"]["size_known"]
    assert (a["job"]["width"], a["job"]["height"]) == (1024, 1024)
    assert any("size_origin pixel_count" in n and "ResizeImageMaskNode" in n for n in a["notes"])
