"""Issue 19 item 2 and issue 26, the Wan neighbours: the official Animate 2, HuMo, Wan-Move and Bernini-R templates
take their latent size from their own conditioning nodes (WanAnimate2ToVideo, WanHuMoImageToVideo,
WanMoveTrackToVideo, BerniniConditioning), not from an assumed 1024x1024 frame; what those nodes add beyond the
latent (the Animate 2 pose cache, HuMo's reference frame, Bernini's in-context streams) is named in the notes; the
SCAIL-2 and VACE inpainting templates read their Wan side with its own shapes."""
import pytest

from family_templates import SKIP, plan

pytestmark = SKIP

# template -> (diffusion model, width, height, frames) as the template's conditioning node records them
TEMPLATES = {
    # Animate 2 and Wan-Move take GetImageSize of a ResizeImageMaskNode ("scale dimensions"), not the copies
    # their latent nodes store (832x480, 640x640).
    "video_wan_animate2": ("wan-animate-2-14b", 482, 854, 81),
    "video_wan_animate2_distilled": ("wan-animate-2-14b", 482, 854, 81),
    "video_humo": ("humo-17b", 640, 640, 97),
    "video_wanmove_480p": ("wan-move-14b", 832, 480, 81),
    "video_bernini_r_video_editing": ("bernini-r-a14b", 480, 832, 81),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_size_comes_from_the_templates_own_node(name):
    model, width, height, frames = TEMPLATES[name]
    a = plan(name)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert a["workflow"]["size_known"]
    assert job["diffusion"]["model"] == model
    assert (job["width"], job["height"], job["frames"]) == (width, height, frames)
    assert not any("assumed 1024x1024" in n for n in job["notes"])


def test_what_the_nodes_add_is_named_not_silent():
    notes = " ".join(plan("video_wan_animate2")["job"]["notes"])
    assert "pose-branch cache" in notes and "reference image as one more latent frame" in notes
    assert "reference image's latent frame" in " ".join(plan("video_humo")["job"]["notes"])
    assert "in-context source video" in " ".join(plan("video_bernini_r_video_editing")["job"]["notes"])


def test_a_larger_latent_widget_raises_the_sample_stage(tmp_path):
    # The size is read from WanHuMoImageToVideo's widgets: doubling both sides must grow the activations.
    import json
    import subprocess

    from family_templates import BINARY, FOLDER
    w = json.loads((FOLDER / "video_humo.json").read_text())
    node = next(n for n in w["nodes"] if n["type"] == "WanHuMoImageToVideo")
    node["widgets_values"][0:2] = [1280, 1280]
    path = tmp_path / "humo_1280.json"
    path.write_text(json.dumps(w))
    p = subprocess.run([str(BINARY), "plan", str(path), "--vram", "24", "--json"], capture_output=True, text=True,
                       timeout=120)
    big = json.loads(p.stdout)
    assert (big["job"]["width"], big["job"]["height"]) == (1280, 1280)

    def activations(a):
        sample = next(s for s in a["stages"] if s["name"] == "sample")
        # Earlier models kept on the card (the VAE, the audio encoder) are weights too, not activations.
        return sum(v for k, v in sample["breakdown"].items() if not k.startswith("weights") and k != "cached_models")
    assert activations(big) > 3 * activations(plan("video_humo"))


@pytest.mark.parametrize("name,model", [("video_wan21_scail2_character_replacement", "wan2.1-scail-2-14b"),
                                        ("video_wan21_scail2_character_replacement_int8", "wan2.1-scail-2-14b"),
                                        ("video_wan_vace_inpainting", "wan2.1-vace-14b")])
def test_the_sam_templates_read_their_wan_side_with_its_own_shapes(name, model):
    # SAM 3.1 (the checkpoint loader) is another engineer's entry; the Wan sampler's model and size are read here.
    a = plan(name)
    assert a["job"]["diffusion"]["model"] == model
    assert a["workflow"]["size_known"]
    assert a["job"]["frames"] > 1


def test_an_edit_whose_size_follows_a_longer_side_of_the_input_image_is_sized_at_its_bound():
    # Bernini-R image editing: the latent takes GetImageSize of ResizeImageMaskNode "scale longer dimension" (1280)
    # of a loaded image whose aspect the workflow does not give (not the 928x1280 the latent node stores): the
    # 1280 x 1280 square holds the image whatever its aspect, so it is the size, said as an upper bound.
    a = plan("video_bernini_r_image_editing")
    assert a["job"]["diffusion"]["model"] == "bernini-r-a14b"
    assert a["workflow"]["size_known"] and a["verdict"] != "unknown"
    assert (a["job"]["width"], a["job"]["height"]) == (1280, 1280)
    assert any("size_origin at_most" in n for n in a["notes"])
