"""Issue 26, image DiTs part D: the official Lens and Lens Turbo templates are read with the 48-block dual-stream MMDiT,
GPT-OSS-20B (nvfp4) and the FLUX.2 VAE at the 1440 x 1440 they record; Chroma1 Radiance and PixelDiT sample pixels
(the pixel_space passthrough VAE, 16 x 16 pixel patches); NewBie-Image is a 36-layer Lumina 2 NextDiT on Gemma 3 4B
and Jina CLIP v2; Ming-Image 0.1 Design is Z-Image's NextDiT on its MoE encoder, the edit's input image joining the
sequence; FIBO 2 stays unknown (no public widths). The weights are what the published file sizes say."""
import pytest

from family_templates import SKIP, assert_read_with, plan, sequence_tokens, weights

pytestmark = SKIP

GIB = 2 ** 30


@pytest.mark.parametrize("template, model, precision, encoders, vae, shape, cfg", [
    # The latent side is ResolutionSelector -> PrimitiveInt -> ComfyMathExpression (a & -8): the stored 1440 is read.
    ("image_lens_t2i", "lens", "bf16", ["gpt-oss-20b"], "flux2-vae", (1440, 1440, 1), 5.0),
    ("image_lens_turbo_t2i", "lens-turbo", "bf16", ["gpt-oss-20b"], "flux2-vae", (1440, 1440, 1), 1.0),
    ("image_chroma1_radiance_text_to_image", "chroma1-radiance", "", ["t5-xxl"], "pixel-space", (1024, 1024, 1), 3.5),
    ("image_pixeldit_t2i", "pixeldit-1300m", "bf16", ["gemma2-2b"], "pixel-space", (1024, 1024, 1), 4.0),
    ("image_newbieimage_exp0_1-t2i", "newbie-image-exp0.1", "bf16", ["gemma3-4b", "jina-clip-v2"], "flux-vae",
     (1024, 1536, 1), 5.5),
    ("image_ming_image_01_design_t2i", "ming-image-0.1-design", "int8_convrot", ["ming-image-0.1-encoder"],
     "ming-image-vae", (1024, 1024, 1), 1.0),
])
def test_a_template_is_read_with_its_own_models_and_size(template, model, precision, encoders, vae, shape, cfg):
    a = plan(template)
    assert a["verdict"] != "unknown", a.get("reason")
    assert_read_with(a, model, precision, encoders, vae, shape)
    assert a["job"]["cfg"] == cfg


@pytest.mark.parametrize("template, prefix, gib, tolerance", [
    # The sizes the templates' model links list (GiB); int8 files also hold one fp32 scale per row.
    ("image_lens_t2i", "lens", 7.64, 0.01),
    ("image_chroma1_radiance_text_to_image", "chroma1-radiance", 17.71, 0.01),
    ("image_pixeldit_t2i", "pixeldit-1300m", 2.43, 0.01),
    ("image_newbieimage_exp0_1-t2i", "newbie-image-exp0.1", 6.49, 0.01),
    ("image_ming_image_01_design_t2i", "ming-image-0.1-design", 5.75, 0.01),
])
def test_the_weights_are_what_the_published_file_sizes_say(template, prefix, gib, tolerance):
    assert abs(weights(plan(template, 80), prefix) / (gib * GIB) - 1) < tolerance


def test_the_encoders_are_what_their_files_say():
    # gemma_3_4b_it_bf16 7.23 GiB (the text model only) and jina_clip_v2_bf16 1.04 GiB (the text tower only).
    encode = next(s for s in plan("image_newbieimage_exp0_1-t2i", 80)["stages"] if s["name"] == "text_encode")
    gemma = max(v for k, v in encode["breakdown"].items() if k.startswith("weights:gemma3-4b"))
    jina = max(v for k, v in encode["breakdown"].items() if k.startswith("weights:jina-clip-v2"))
    assert abs(gemma / (7.23 * GIB) - 1) < 0.01 and abs(jina / (1.04 * GIB) - 1) < 0.01


@pytest.mark.parametrize("template, tokens", [
    # 1440 x 1440 on the FLUX.2 latent (/8, packed 2 x 2) is 90 x 90; at most 512 GPT-OSS tokens less the 97 the
    # encoder drops join the sequence.
    ("image_lens_t2i", 90 * 90 + 415),
    # Pixel space, 16 x 16 pixel patches: 1024 x 1024 is 64 x 64 patch tokens beside the prompt.
    ("image_chroma1_radiance_text_to_image", 64 * 64 + 256),
    ("image_pixeldit_t2i", 64 * 64 + 300),
    # The Lumina 2 joint sequence: 1024 x 1536 on the FLUX.1 latent patchified 2 x 2, and the long XML prompt.
    ("image_newbieimage_exp0_1-t2i", 64 * 96 + 1024),
    ("image_ming_image_01_design_t2i", 64 * 64 + 512),
])
def test_the_sequences_follow_each_architecture(template, tokens):
    assert sequence_tokens(plan(template, 80)) == tokens


def test_the_pixel_space_vae_holds_no_weights_and_little_memory():
    decode = next(s for s in plan("image_pixeldit_t2i", 80)["stages"] if s["name"] == "vae_decode")
    assert decode["breakdown"]["weights:pixel-space"] < 16
    assert decode["breakdown"]["activations"] < 1024 * 1024 * 12 * 4  # 12 elements a pixel at most


def test_gpt_oss_nvfp4_is_priced_as_its_file():
    # The nvfp4 file keeps attention, routers and the embedding in bf16 (unquantised_params): 12.33 GiB listed.
    a = plan("image_lens_t2i", 80)
    te = next(t for t in a["job"]["text_encoders"] if t["model"] == "gpt-oss-20b")
    assert te["precision"] == "nvfp4"
    encode = next(s for s in a["stages"] if s["name"] == "text_encode")
    te_bytes = max(v for k, v in encode["breakdown"].items() if k.startswith("weights:gpt-oss"))
    assert abs(te_bytes / (12.33 * GIB) - 1) < 0.01


def test_the_ming_edit_says_its_size_comes_from_the_input_image_and_counts_it_as_tokens():
    # LoadImage -> ResizeImageMaskNode (1 MP) -> GetImageSize -> PrimitiveInt -> EmptyLatentImage: the stored 1024 is
    # assumed and said; TextEncodeMingImageEdit appends the image to the sequence as clean frames.
    a = plan("image_ming_image_01_design_image_edit", 80)
    assert a["job"]["diffusion"]["model"] == "ming-image-0.1-design"
    assert any("comes from an input image (GetImageSize" in n for n in a["notes"])
    assert a["job"]["reference_images"] == 1
    assert sequence_tokens(a) == 2 * 64 * 64 + 512


@pytest.mark.parametrize("template, file", [("image_fibo2_edit_dev_pe", "fibo2_dev_int8_convrot.safetensors"),
                                            ("image_fibo2_edit_turbo_pe", "fibo2_edit_turbo_int8_convrot.safetensors")])
def test_fibo2_stays_unknown(template, file):
    # No public source gives FIBO 2's widths; its TextEncodeFibo2 sizes the latent from the input image (0 x 0).
    a = plan(template)
    assert a["verdict"] == "unknown" and file in a["reason"]
