"""Issue 26, Mage-Flow: the official text-to-image templates (base and Turbo, int8_convrot) are read with the 12-block
MMDiT, Qwen3-VL-4B and the Mage-VAE at the size TextEncodeMageFlowEdit records (1024 x 1024 on the 128-channel /16
latent, 4096 tokens); the edit templates name their models but take their size from the input image, so it stays
unknown (and they are not counted as estimated)."""
import pytest

from family_templates import SKIP, plan

pytestmark = SKIP


@pytest.mark.parametrize("template, cfg", [("image_mage_flow_t2i_int8", 5.0), ("image_mage_flow_turbo_t2i_int8", 1.0)])
def test_a_text_to_image_template_is_read_with_its_own_models_and_size(template, cfg):
    a = plan(template)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == ("mage-flow", "int8_convrot")
    assert [t["model"] for t in job["text_encoders"]] == ["qwen3vl-4b"]
    assert job["vae"]["model"] == "mage-flow-vae"
    assert a["workflow"]["size_known"] and (job["width"], job["height"]) == (1024, 1024)
    assert job["cfg"] == cfg


def test_the_16x_latent_is_not_patchified():
    sample = next(s for s in plan("image_mage_flow_t2i_int8", 80)["stages"] if s["name"] == "sample")
    tokens = int(next(n for n in sample["notes"] if "tokens per sequence" in n).split()[0])
    assert tokens == (1024 // 16) ** 2 + 256  # image tokens + the text allowance, joint attention


@pytest.mark.parametrize("template", ["image_mage_flow_edit_int8", "image_mage_flow_edit_turbo_int8"])
def test_an_edit_template_names_its_models_but_not_a_size(template):
    a = plan(template)
    by_role = {l["role"]: l["model"] for l in a["workflow"]["loaders"]}
    assert by_role["diffusion"] == "mage-flow-edit" and by_role["vae"] == "mage-flow-vae"
    assert not a["workflow"]["size_known"]
