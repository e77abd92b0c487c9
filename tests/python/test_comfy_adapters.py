"""comfy_adapters reads ComfyUI objects and asks the core which catalog model they are: it holds no
model table of its own (the knowledge is native/data/comfy_nodes.json model_configs)."""
import json
import pathlib
import re
import types

REPO = pathlib.Path(__file__).resolve().parents[2]


def _model(config_name, **unet_config):
    config_cls = type(config_name, (), {"unet_config": unet_config})
    return types.SimpleNamespace(model=types.SimpleNamespace(model_config=config_cls()))


def test_a_loaded_model_is_recognised_by_the_core(fake_core):
    from headroom_pack.nodes.comfyui import comfy_adapters
    fake_core.recognised = "some-model"
    descriptor = comfy_adapters.model_descriptor(_model("WAN21_T2V", dim=5120, in_dim=36))
    assert comfy_adapters.catalog_model_name(descriptor) == "some-model"
    kind, request = fake_core.calls[-1]
    assert kind == "recognise"
    assert request == {"comfy_config": {"config_class": "WAN21_T2V", "dim": 5120, "in_channels": 36}}


def test_a_model_the_core_does_not_know_is_none(fake_core):
    from headroom_pack.nodes.comfyui import comfy_adapters
    fake_core.recognised = None
    descriptor = comfy_adapters.model_descriptor(_model("SDXL", hidden_size=320))
    assert comfy_adapters.catalog_model_name(descriptor) is None
    assert fake_core.calls[-1][1]["comfy_config"] == {"config_class": "SDXL", "dim": 320, "in_channels": None}


def test_no_catalog_model_name_in_the_adapters():
    """Neither a catalog name nor its squashed form ("flux1dev") is spelt in comfy_adapters.py."""
    names = [m["name"] for m in json.loads((REPO / "native/data/models.json").read_text())["models"]]
    text = (REPO / "nodes/comfyui/comfy_adapters.py").read_text().lower()
    for name in names:
        for spelling in {name, re.sub(r"[^a-z0-9]", "", name)}:
            assert f'"{spelling}"' not in text and f"'{spelling}'" not in text, spelling
