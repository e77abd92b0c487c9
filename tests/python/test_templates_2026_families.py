"""The official templates of the 2026 families (issue 19 item 6), planned with their own models: every file a
template loads for Krea 2, Qwen3-VL-4B, Wan Animate 2, SCAIL-2, Wan Dancer, HuMo, ChronoEdit, Wan-Move and
Bernini-R is read as that catalog model in the format its name says, and none of them is what stops a plan.
The templates come from the pinned comfyui-workflow-templates-json package, or from an unpacked wheel under
HEADROOM_TEMPLATES_DIR."""
import importlib.resources
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_DIR

UNPACKED = Path(os.environ.get("HEADROOM_TEMPLATES_DIR",
                               "/tmp/tpl/x/comfyui_workflow_templates_json/templates"))

# (role, file) -> (catalog model, precision) as each official template loads them (0.1.123).
QWEN3VL_INT8 = ("text_encoder", "qwen3vl_4b_int8_convrot.safetensors"), ("qwen3vl-4b", "int8_convrot")
QWEN3VL_FP8 = ("text_encoder", "qwen3vl_4b_fp8_scaled.safetensors"), ("qwen3vl-4b", "fp8_scaled")
QWEN_IMAGE_VAE = ("vae", "qwen_image_vae.safetensors"), ("wan2.1-vae", None)
TEMPLATES = {
    "image_krea2_turbo_t2i": [(("diffusion", "krea2_turbo_fp8_scaled.safetensors"), ("krea2-turbo", "fp8_scaled")),
                              QWEN3VL_FP8, QWEN_IMAGE_VAE],
    "image_krea2_turbo_t2i_int8": [(("diffusion", "krea2_turbo_int8_convrot.safetensors"), ("krea2-turbo", "int8_convrot")),
                                   QWEN3VL_FP8, QWEN_IMAGE_VAE],
    "image_krea2_turbo_int8_image_style_reference": [
        (("diffusion", "krea2_turbo_int8_convrot.safetensors"), ("krea2-turbo", "int8_convrot")), QWEN3VL_FP8, QWEN_IMAGE_VAE],
    "video_wan_animate2": [(("diffusion", "wan_animate_2_int8_convrot.safetensors"), ("wan-animate-2-14b", "int8_convrot"))],
    "video_wan_animate2_distilled": [
        (("diffusion", "wan_animate_2_distill_int8_convrot.safetensors"), ("wan-animate-2-14b", "int8_convrot"))],
    "video_wan21_scail2_character_replacement": [
        (("diffusion", "wan2.1_14B_SCAIL_2_fp16.safetensors"), ("wan2.1-scail-2-14b", "fp16"))],
    "video_wan21_scail2_character_replacement_int8": [
        (("diffusion", "wan2.1_14B_SCAIL_2_int8_convrot.safetensors"), ("wan2.1-scail-2-14b", "int8_convrot"))],
    "video_wan_dancer": [
        (("diffusion", "wan2.2_dancer_14b_global_fp8_scaled.safetensors"), ("wan2.2-dancer-14b", "fp8_scaled")),
        (("diffusion", "wan2.2_dancer_14b_local_fp8_scaled.safetensors"), ("wan2.2-dancer-14b", "fp8_scaled"))],
    "video_humo": [(("diffusion", "humo_17B_fp8_e4m3fn.safetensors"), ("humo-17b", "fp8_e4m3fn"))],
    "image_chrono_edit_14B": [(("diffusion", "chrono_edit_14B_fp16.safetensors"), ("chrono-edit-14b", "fp8_e4m3fn"))],
    "video_wanmove_480p": [(("diffusion", "Wan21-WanMove_fp8_scaled_e4m3fn_KJ.safetensors"), ("wan-move-14b", "fp8_scaled"))],
    "video_bernini_r_video_editing": [
        (("diffusion", "wan2.2_bernini_r_high_noise_fp8_scaled.safetensors"), ("bernini-r-a14b", "fp8_scaled")),
        (("diffusion", "wan2.2_bernini_r_low_noise_fp8_scaled.safetensors"), ("bernini-r-a14b", "fp8_scaled"))],
    # FLUX 3 Image Klein: its Qwen3-VL-4B encoder is known; its DiT is not in the catalog (see flux3 test below).
    "image_flux3_klein_t2i": [QWEN3VL_INT8],
    "image_flux3_klein_distilled_t2i": [QWEN3VL_INT8],
    "image_flux3_klein_image_edit": [QWEN3VL_INT8],
    "image_flux3_klein_distilled_image_edit": [QWEN3VL_INT8],
}
ADDED = {"qwen3vl-4b", "krea2-turbo", "krea2-raw", "wan-animate-2-14b", "wan2.1-scail-2-14b", "wan2.2-dancer-14b",
         "humo-17b", "chrono-edit-14b", "wan-move-14b", "bernini-r-a14b"}
VERDICTS = {"fits", "tight", "streams", "does_not_fit"}


def _templates_dir():
    try:
        packaged = importlib.resources.files("comfyui_workflow_templates_json") / "templates"
        if packaged.is_dir():
            return Path(str(packaged))
    except ModuleNotFoundError:
        pass
    if UNPACKED.is_dir():
        return UNPACKED
    pytest.skip("comfyui-workflow-templates-json is not installed and HEADROOM_TEMPLATES_DIR holds no templates")


def _plan(name, vram="24"):
    cli = BUILD_DIR / "headroom"
    if not cli.exists():
        pytest.skip(f"{cli} is not built")
    path = _templates_dir() / f"{name}.json"
    if not path.exists():
        pytest.fail(f"the pinned templates package has no {path.name}")
    run = subprocess.run([str(cli), "plan", "--json", "--vram", vram, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode in (0, 1, 3), f"{name}: exit {run.returncode}: {run.stderr[-500:]}"
    return json.loads(run.stdout)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_each_template_is_read_with_its_own_models(name):
    plan = _plan(name)
    loaders = {(l["role"], l["file"]): (l["model"], l["precision"]) for l in plan["workflow"]["loaders"]}
    for key, expected in TEMPLATES[name]:
        assert key in loaders, f"{name}: no loader of {key}; loaders {sorted(loaders)}"
        assert loaders[key] == expected, f"{name}: {key} read as {loaders[key]}, expected {expected}"
    # None of the families added here is what a plan cannot cover.
    missing = plan.get("not_covered")
    if missing:
        assert (missing.get("role"), missing.get("file")) not in {k for k, _ in TEMPLATES[name]}
        assert missing.get("model") not in ADDED


@pytest.mark.parametrize("name", ["image_krea2_turbo_t2i", "image_krea2_turbo_t2i_int8"])
def test_krea2_templates_are_planned_on_their_own_shape(name):
    plan = _plan(name)
    job = plan["job"]
    assert job["diffusion"]["model"] == "krea2-turbo"
    assert [t["model"] for t in job["text_encoders"]] == ["qwen3vl-4b"]
    assert (job["width"], job["height"], job["frames"], job["cfg"]) == (1024, 1024, 1, 1.0)  # EmptyLatentImage, KSampler
    assert plan["verdict"] in VERDICTS
    sample = next(s for s in plan["stages"] if s["name"] == "sample")
    assert "krea2-turbo" in sample["resident"]
    # int8_convrot and fp8_scaled store one byte a weight: the same weights, whichever file the template loads.
    assert sample["breakdown"]["weights:krea2-turbo"] > 12 * 10 ** 9


def test_the_fp8_and_int8_krea2_files_weigh_the_same():
    fp8 = _plan("image_krea2_turbo_t2i")
    int8 = _plan("image_krea2_turbo_t2i_int8")
    weights = [next(s for s in p["stages"] if s["name"] == "sample")["breakdown"]["weights:krea2-turbo"] for p in (fp8, int8)]
    assert weights[0] == weights[1]


def test_flux3_klein_is_refused_for_its_dit_only():
    # No ComfyUI code for the FLUX 3 Image Klein DiT was available to read its architecture from, so the
    # catalog has no entry: the plan says which file and node it does not cover, never a guess.
    for name in ["image_flux3_klein_t2i", "image_flux3_klein_distilled_image_edit"]:
        plan = _plan(name)
        assert plan["verdict"] == "unknown"
        assert plan["not_covered"]["role"] == "diffusion"
        assert plan["not_covered"]["file"].startswith("flux3-image-klein")


def test_chrono_edit_is_planned_on_its_template_shape():
    # WanImageToVideo 720x720, length 5, KSampler cfg 4; UNETLoader's weight_dtype fp8_e4m3fn over the fp16 file.
    job = _plan("image_chrono_edit_14B")["job"]
    assert job["diffusion"]["model"] == "chrono-edit-14b"
    assert (job["width"], job["height"], job["frames"], job["cfg"]) == (720, 720, 5, 4.0)
    assert job["clip_vision"]["model"] == "clip-vision-h"


def test_the_prompt_upsampler_is_a_stage_of_its_own():
    # Krea 2's template enhances the prompt with TextGenerate on its own Qwen3-VL-4B encoder: that runs first,
    # with the encoder's weights and the key/value cache of what it writes.
    plan = _plan("image_krea2_turbo_t2i")
    assert "TextGenerate" not in [u["type"] for u in plan["unknown_nodes"]]
    [gen] = plan["job"]["text_generations"]
    assert gen["model"]["model"] == "qwen3vl-4b" and gen["new_tokens"] >= 1
    assert [s["name"] for s in plan["stages"]][:2] == ["text_generate", "text_encode"]
    assert plan["stages"][0]["breakdown"]["kv_cache"] > 0
    # FLUX 3 Klein's upsampler (Qwen3.5-9B w4a8) is not in the catalog: said, not guessed.
    flux3 = _plan("image_flux3_klein_distilled_image_edit")
    assert any(n.startswith("TextGenerate") and "not in the catalog" in n for n in flux3["workflow"]["notes"])
