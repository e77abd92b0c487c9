"""A latent that follows a loaded image (an edit, an inpaint) is sized by the user's own image: the nodes
hand the core ComfyUI's input folder, and the core reads the image's header there. Checked against the
images Pillow (ComfyUI's own image library) writes and the size LoadImage gives them (EXIF orientation
applied); an animated image, a missing file or a path out of the folder leaves the size unknown, naming
LoadImage."""
import json
import subprocess
import sys
import types

import pytest
from PIL import Image, ImageOps

from conftest import BUILD_DIR, REPO, load_pack, real_core_or_skip

load_pack()
from headroom_pack.nodes.comfyui import comfy_adapters  # noqa: E402


def prompt(image_name):
    """An API prompt whose sampled latent is the VAE encoding of a loaded image (img2img)."""
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev-fp8.safetensors", "weight_dtype": "default"}},
        "2": {"class_type": "LoadImage", "inputs": {"image": image_name}},
        "3": {"class_type": "VAEEncode", "inputs": {"pixels": ["2", 0], "vae": ["8", 0]}},
        "4": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "latent_image": ["3", 0], "seed": 1, "steps": 20,
                                                  "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
                                                  "denoise": 0.6, "positive": ["5", 0], "negative": ["5", 0]}},
        "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "x", "clip": ["6", 0]}},
        "6": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp8_e4m3fn.safetensors",
                                                         "clip_name2": "clip_l.safetensors", "type": "flux"}},
        "7": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["8", 0]}},
        "8": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
        "9": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
    }


def folder_paths_standin(input_dir):
    module = types.ModuleType("folder_paths")
    module.models_dir = str(input_dir.parent / "models")
    module.folder_names_and_paths = {}
    module.get_input_directory = lambda: str(input_dir)
    return module


def plan(core, monkeypatch, input_dir, image_name):
    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths_standin(input_dir))
    request = comfy_adapters.plan_request(prompt(image_name), {})
    assert request["input_dir"] == str(input_dir)
    return json.loads(core.plan(json.dumps({**request, "gpu": "4090"})))


def loadimage_size(path):
    """What ComfyUI's LoadImage hands the graph: the first frame, EXIF orientation applied."""
    with Image.open(path) as im:
        return ImageOps.exif_transpose(im).size


def still_images(folder):
    Image.new("RGB", (1536, 1024)).save(folder / "wide.png")
    Image.new("RGB", (832, 1216)).save(folder / "tall.webp", lossless=True)
    Image.new("RGB", (1000, 750)).save(folder / "lossy.webp", quality=80)
    Image.new("RGB", (640, 480)).save(folder / "plain.bmp")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated a quarter: LoadImage swaps the sides
    Image.new("RGB", (1600, 896)).save(folder / "phone.jpg", exif=exif)
    (folder / "sub").mkdir()
    Image.new("RGB", (1024, 576)).save(folder / "sub" / "in_sub.jpg")
    return ["wide.png", "tall.webp", "lossy.webp", "plain.bmp", "phone.jpg", "sub/in_sub.jpg"]


def test_the_request_carries_comfyuis_input_folder_and_none_outside(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths_standin(tmp_path))
    assert comfy_adapters.plan_request(prompt("x.png"), {})["input_dir"] == str(tmp_path)
    monkeypatch.setitem(sys.modules, "folder_paths", None)
    assert "input_dir" not in comfy_adapters.plan_request(prompt("x.png"), {})


def test_each_image_is_sized_as_loadimage_gives_it(monkeypatch, tmp_path):
    core = real_core_or_skip()
    for name in still_images(tmp_path):
        r = plan(core, monkeypatch, tmp_path, name)
        w, h = loadimage_size(tmp_path / name)
        assert (r["job"]["width"], r["job"]["height"]) == (w, h), (name, r["job"])
        assert r["verdict_id"] != "unknown", (name, r.get("not_covered"))
        assert any(f"{w}x{h} px, read from the header of '{name}'" in n for n in r["notes"]), r["notes"]
    # The annotation the frontend adds for the input folder names the same file.
    assert plan(core, monkeypatch, tmp_path, "wide.png [input]")["job"]["width"] == 1536


@pytest.mark.parametrize("name, why", [
    ("missing.png", "could not read from the input folder"),
    ("../outside.png", "a path outside ComfyUI's input folder"),
    ("render.png [output]", "output or temp folder"),
    ("anim.gif", "an animated image ('anim.gif', 3 frames)"),
    ("anim.png", "an animated image ('anim.png', 2 frames)"),
    ("notes.txt", "not an image Headroom reads"),
])
def test_an_image_it_cannot_size_leaves_the_verdict_unknown_naming_loadimage(monkeypatch, tmp_path, name, why):
    core = real_core_or_skip()
    folder = tmp_path / "input"
    folder.mkdir()
    frames = [Image.new("RGB", (256, 256), c) for c in ("red", "green", "blue")]
    frames[0].save(folder / "anim.gif", save_all=True, append_images=frames[1:])
    frames[0].save(folder / "anim.png", save_all=True, append_images=frames[1:2])
    Image.new("RGB", (64, 64)).save(tmp_path / "outside.png")
    (folder / "notes.txt").write_text("not an image")
    r = plan(core, monkeypatch, folder, name)
    assert r["verdict_id"] == "unknown"
    nc = r["not_covered"]
    assert (nc["kind"], nc["node_type"], nc["node_id"]) == ("size", "LoadImage", "2"), nc
    assert why in nc["why"], nc["why"]


def cli_plan(tmp_path, workflow, size):
    """The CLI's JSON plan of `workflow` with a `size` photo.png in the input folder it is given."""
    binary = (BUILD_DIR if BUILD_DIR.is_absolute() else REPO / BUILD_DIR) / "headroom"
    if not binary.is_file():
        pytest.skip(f"{binary} is not built")
    Image.new("RGB", size).save(tmp_path / "photo.png")
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    run = subprocess.run([str(binary), "plan", str(tmp_path / "wf.json"), "--vram", "24", "--json", "--input-dir",
                          str(tmp_path)], capture_output=True, text=True, timeout=60)
    return binary, run, json.loads(run.stdout)


def test_the_cli_reads_the_input_folder(tmp_path):
    binary, run, answer = cli_plan(tmp_path, prompt("photo.png"), (1216, 832))
    assert (answer["job"]["width"], answer["job"]["height"]) == (1216, 832)
    assert run.returncode in (0, 1)
    without = subprocess.run([str(binary), "plan", str(tmp_path / "wf.json"), "--vram", "24"], capture_output=True,
                             text=True, timeout=60)
    assert without.returncode == 3 and "LoadImage" in without.stdout


def measured_prompt(image_name):
    """A text-to-image prompt whose empty latent takes its sides from GetImageSize of a loaded image (the
    edit templates' pattern: the output keeps the input's size)."""
    p = prompt(image_name)
    p["10"] = {"class_type": "GetImageSize", "inputs": {"image": ["2", 0]}}
    p["11"] = {"class_type": "EmptyLatentImage", "inputs": {"width": ["10", 0], "height": ["10", 1], "batch_size": 1}}
    p["4"]["inputs"]["latent_image"] = ["11", 0]
    del p["3"]
    return p


def test_a_latent_getimagesize_measures_follows_the_image_file(tmp_path):
    binary, _, answer = cli_plan(tmp_path, measured_prompt("photo.png"), (1344, 768))
    assert (answer["job"]["width"], answer["job"]["height"]) == (1344, 768), answer["job"]
    assert answer["verdict_id"] != "unknown"
    without = subprocess.run([str(binary), "plan", str(tmp_path / "wf.json"), "--vram", "24", "--json"],
                             capture_output=True, text=True, timeout=60)
    assert without.returncode == 3
    nc = json.loads(without.stdout)["not_covered"]
    assert (nc["node_type"], nc["node_id"]) == ("LoadImage", "2"), nc
