"""Files kept outside ComfyUI's models folder (extra_model_paths.yaml, a shared A1111 tree) are read too:
the nodes hand the core ComfyUI's own folder lists, and the core finds a LoRA there and counts its
bytes from its header. Without the lists it would say the size is unknown."""
import json
import sys
import types

import pytest
import torch
from safetensors.torch import save_file

from conftest import load_pack, real_core_or_skip

load_pack()
from headroom_pack.nodes.comfyui import comfy_adapters  # noqa: E402

PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "LoraLoaderModelOnly",
          "inputs": {"model": ["1", 0], "lora_name": "styles/my_lora.safetensors", "strength_model": 1.0}},
    "3": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "4": {"class_type": "KSampler", "inputs": {"model": ["2", 0], "latent_image": ["3", 0], "seed": 1, "steps": 20,
                                              "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
                                              "denoise": 1.0, "positive": ["5", 0], "negative": ["5", 0]}},
    "5": {"class_type": "CLIPTextEncode", "inputs": {"text": "x", "clip": ["6", 0]}},
    "6": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors",
                                                     "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["4", 0], "vae": ["8", 0]}},
    "8": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "9": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}},
}


def folder_paths_standin(models_dir, table):
    module = types.ModuleType("folder_paths")
    module.models_dir = str(models_dir)
    module.folder_names_and_paths = table
    return module


def test_the_request_carries_comfyuis_folder_lists(monkeypatch, tmp_path):
    table = {"loras": ([str(tmp_path / "models" / "loras"), "/shared/sd/models/Lora"], {".safetensors"}),
             "vae": ([str(tmp_path / "models" / "vae")], {".safetensors"}),
             "broken": "not a tuple", 7: ([str(tmp_path)], set()), "empty": ([], set())}
    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths_standin(tmp_path / "models", table))
    request = comfy_adapters.plan_request(PROMPT, {})
    assert request["models_dir"] == str(tmp_path / "models")
    assert request["model_folders"] == {"loras": [str(tmp_path / "models" / "loras"), "/shared/sd/models/Lora"],
                                        "vae": [str(tmp_path / "models" / "vae")]}


def test_outside_comfyui_no_folder_lists_are_sent(monkeypatch):
    monkeypatch.setitem(sys.modules, "folder_paths", None)  # import fails as outside ComfyUI
    assert "model_folders" not in comfy_adapters.plan_request(PROMPT, {})


def test_a_lora_in_an_extra_folder_is_counted_from_its_header(monkeypatch, tmp_path):
    core = real_core_or_skip()
    shared = tmp_path / "shared" / "Lora" / "styles"
    shared.mkdir(parents=True)
    lora = {f"diffusion_model.double_blocks.{i}.img_attn.qkv.lora_{s}.weight": torch.zeros(16, 3072 if s == "A" else 16,
                                                                                          dtype=torch.bfloat16)
            for i in range(4) for s in ("A", "B")}
    save_file(lora, str(shared / "my_lora.safetensors"))
    tensor_bytes = sum(t.numel() * t.element_size() for t in lora.values())
    (tmp_path / "models" / "loras").mkdir(parents=True)
    table = {"loras": ([str(tmp_path / "models" / "loras"), str(tmp_path / "shared" / "Lora")], {".safetensors"})}

    monkeypatch.setitem(sys.modules, "folder_paths", None)
    without = json.loads(core.plan(json.dumps({**comfy_adapters.plan_request(PROMPT, {}), "gpu": "4090",
                                               "models_dir": str(tmp_path / "models")})))
    assert any("my_lora.safetensors" in n and "size is unknown" in n for n in without["notes"])

    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths_standin(tmp_path / "models", table))
    with_lists = json.loads(core.plan(json.dumps({**comfy_adapters.plan_request(PROMPT, {}), "gpu": "4090"})))
    notes = [n for n in with_lists["notes"] if "my_lora.safetensors" in n]
    assert notes and f"{tensor_bytes} bytes read from" in notes[0] and str(shared) in notes[0], notes
    assert with_lists["job"]["lora_bytes"] == tensor_bytes
