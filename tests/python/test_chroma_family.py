"""Issue 26, Chroma: the official Chroma1-HD template is read with its own transformer (FLUX.1-schnell's blocks
without per-block modulation, 8.9 B), T5-XXL alone and the FLUX.1 VAE at its recorded size; Chroma Radiance
(pixel space, no VAE latent) is its own entry, never Chroma1-HD or FLUX.1 (its template: test_image_families_d.py)."""
from family_templates import SKIP, plan

pytestmark = SKIP


def test_the_chroma_template_is_read_with_its_own_models():
    a = plan("image_chroma_text_to_image")
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == ("chroma1-hd", "fp8mixed")
    assert [t["model"] for t in job["text_encoders"]] == ["t5-xxl"]
    assert job["vae"]["model"] == "flux-vae" and a["workflow"]["size_known"]


def test_chroma_weighs_less_than_flux1_schnell_it_derives_from():
    # 8.9 B against 11.9 B: the same precision's weight bytes are about three quarters of FLUX.1's.
    chroma = plan("image_chroma_text_to_image", 8)
    weights = next(s for s in chroma["stages"] if s["name"] == "sample")["full_load_bytes"]
    assert 8.9e9 * 0.95 < weights < 11.9e9


def test_chroma_radiance_is_not_taken_for_chroma_or_flux():
    a = plan("image_chroma1_radiance_text_to_image")
    diffusion = [l for l in a["workflow"]["loaders"] if l["role"] == "diffusion"]
    assert [l["model"] for l in diffusion] == ["chroma1-radiance"]
