"""Every node's INPUT_TYPES / RETURN_TYPES follows ComfyUI's V1 schema rules (nodes.py, server.node_info,
execution.py): sections, type strings or combo lists, options dicts, defaults inside min/max, known
hidden values, tuples for outputs, an existing FUNCTION that accepts every input."""
import inspect

import pytest

from conftest import load_pack

PACK = load_pack()
HIDDEN_VALUES = {"PROMPT", "DYNPROMPT", "EXTRA_PNGINFO", "UNIQUE_ID", "AUTH_TOKEN_COMFY_ORG", "API_KEY_COMFY_ORG"}
NUMERIC = {"INT", "FLOAT"}


@pytest.mark.parametrize("name", sorted(PACK.NODE_CLASS_MAPPINGS))
def test_schema(name):
    cls = PACK.NODE_CLASS_MAPPINGS[name]
    spec = cls.INPUT_TYPES()
    assert isinstance(spec, dict) and set(spec) <= {"required", "optional", "hidden"}
    inputs = {}
    for section in ("required", "optional"):
        for key, entry in spec.get(section, {}).items():
            assert isinstance(entry, tuple) and 1 <= len(entry) <= 2, (name, key)
            kind = entry[0]
            assert isinstance(kind, (str, list)), (name, key)
            opts = entry[1] if len(entry) == 2 else {}
            assert isinstance(opts, dict), (name, key)
            if isinstance(kind, list):
                assert all(isinstance(v, str) for v in kind)
                if "default" in opts:
                    assert opts["default"] in kind, (name, key)
            elif kind in NUMERIC:
                lo, hi, default = opts.get("min"), opts.get("max"), opts.get("default")
                assert default is not None and lo is not None and hi is not None, (name, key)
                assert lo <= default <= hi, (name, key)
                assert opts.get("step", 1) > 0
            elif kind == "STRING" and "default" in opts:
                assert isinstance(opts["default"], str)
            inputs[key] = section
    for key, value in spec.get("hidden", {}).items():
        assert value in HIDDEN_VALUES, (name, key)
        inputs[key] = "hidden"
    assert isinstance(cls.RETURN_TYPES, tuple)
    if hasattr(cls, "RETURN_NAMES"):
        assert isinstance(cls.RETURN_NAMES, tuple) and len(cls.RETURN_NAMES) == len(cls.RETURN_TYPES)
    assert cls.CATEGORY.startswith("Headroom")
    function = getattr(cls, cls.FUNCTION)
    assert callable(function)
    params = inspect.signature(function).parameters
    for key, section in inputs.items():
        assert key in params, f"{name}.{cls.FUNCTION} does not accept input {key!r}"
        if section != "required":
            assert params[key].default is not inspect.Parameter.empty, f"{name}: optional {key!r} needs a default"
    cls()  # ComfyUI instantiates with no arguments


def test_names_and_display_names():
    expected = {"HeadroomPreflight", "HeadroomVAEDecode", "HeadroomLoadDiffusionModel", "HeadroomExplainOOM",
                "HeadroomVRAMSnapshot"}
    assert expected <= set(PACK.NODE_CLASS_MAPPINGS)
    assert set(PACK.NODE_DISPLAY_NAME_MAPPINGS) == set(PACK.NODE_CLASS_MAPPINGS)
    assert PACK.WEB_DIRECTORY == "./web"


def test_preflight_is_inline_on_latent():
    cls = PACK.NODE_CLASS_MAPPINGS["HeadroomPreflight"]
    spec = cls.INPUT_TYPES()
    assert spec["required"]["samples"][0] == "LATENT" and cls.RETURN_TYPES[0] == "LATENT"
    assert set(spec["optional"]) == {"model", "clip", "vae"}
    assert spec["required"]["action"][0] == ["warn", "stop", "apply fix"]
    assert cls.RETURN_TYPES[1] == "STRING"


def test_decode_modes():
    spec = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"].INPUT_TYPES()["required"]
    assert spec["mode"][0] == ["auto", "full", "exact", "fast", "blend"]
    assert spec["samples"][0] == "LATENT" and spec["vae"][0] == "VAE"
