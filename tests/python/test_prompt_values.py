"""What real prompts carry reaches the core as JSON it reads (issue 23 #7 and #8): NaN and Infinity in
is_changed (ComfyUI writes NaN there for every "always run again" node) and in a custom node's inputs,
objects a custom node's IS_CHANGED returns, and a node the browser's backend did not know (no class_type)."""
import json
import math

import fakes
from api_prompts import FLUX_API_PROMPT
from conftest import load_pack, natives_installed, real_core_or_skip

PACK = load_pack()
from headroom_pack.nodes.native import core_json  # noqa: E402
from headroom_pack.nodes.server import prompt_handler  # noqa: E402

# FLUX.1 dev text-to-image with one custom node ComfyUI has already run once, after the decode.
PROMPT = {**{k: v for k, v in FLUX_API_PROMPT.items() if k != "8"},
          "9": {"class_type": "SomeAlwaysRerunNode", "inputs": {"strength": float("inf"), "image": ["7", 0]},
                "is_changed": [float("nan")]}}


def strict_loads(text):
    def refuse(name):
        raise ValueError(f"{name} in the request")
    return json.loads(text, parse_constant=refuse)


def test_non_json_values_become_strings_and_the_rest_is_kept():
    class Opaque:
        pass
    value = {"a": [float("nan"), float("-inf"), 1.5], "b": Opaque(), "c": {(1, 2): b"x", 3: None}, "d": "ok"}
    out = strict_loads(core_json.dumps(value))
    assert out["a"] == ["NaN", "-Infinity", 1.5]
    assert out["b"] == "<Opaque>" and out["c"] == {"<tuple>": "<bytes>", "3": None} and out["d"] == "ok"


def test_a_prompt_that_holds_itself_is_written_not_lost():
    node = {"class_type": "X", "inputs": {}}
    node["inputs"]["self"] = node
    out = strict_loads(core_json.dumps({"1": node}))
    assert out["1"]["class_type"] == "X" and isinstance(out["1"]["inputs"]["self"], str)


def test_plain_json_is_written_as_json_dumps_writes_it():
    plain = {"1": {"class_type": "KSampler", "inputs": {"cfg": 3.5, "seed": 2 ** 60}}}
    assert core_json.dumps(plain) == json.dumps(plain)


def test_preflight_node_estimates_a_prompt_with_nan_is_changed():
    core = real_core_or_skip()
    with natives_installed(core):
        out = PACK.NODE_CLASS_MAPPINGS["HeadroomPreflight"]().run(
            fakes.latent_image(), budget="24", action="warn", prompt=PROMPT)
    report = out["result"][1]
    assert "could not estimate" not in report and "not valid JSON" not in report
    assert "Peak" in report and "SomeAlwaysRerunNode" in report  # estimated; the custom node listed


def test_queue_check_estimates_a_prompt_with_infinity_in_inputs():
    core = real_core_or_skip()
    with natives_installed(core):
        plan = prompt_handler._plan(PROMPT, {"vram_bytes": 24 * 2 ** 30})
    assert plan.get("peak_bytes") and math.isfinite(plan["peak_bytes"])
    assert any(n.get("id") == "9" for n in plan.get("unknown_nodes", []))


def test_a_node_without_class_type_is_reported_not_covered():
    core = real_core_or_skip()
    prompt = {**{k: v for k, v in PROMPT.items() if k != "9"},
              "12": {"inputs": {"image": ["7", 0]}, "_meta": {"title": "Missing node"}}}
    with natives_installed(core):
        plan = prompt_handler._plan(prompt, {"vram_bytes": 24 * 2 ** 30})
    assert plan.get("peak_bytes"), plan
    assert [n["id"] for n in plan.get("unknown_nodes", [])] == ["12"]


def test_the_preflight_names_an_applied_change_by_its_nodes_title(fake_core):
    # A node inside a subgraph has an execution path for its id; the user knows it by its title.
    prompt = {"194:46": {"class_type": "UNETLoader", "_meta": {"title": "Load Diffusion Model"},
                         "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "fp8_e4m3fn"}},
              "5": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}}}
    applied = [{"node_id": "194:46", "widget": "weight_dtype", "from": "default", "to": "fp8_e4m3fn"}]
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomPreflight"]().run(
        fakes.latent_image(), budget="24", prompt=prompt, extra_pnginfo={"headroom": {"applied": applied}})
    line = out["result"][1].splitlines()[-1]
    assert line == 'Applied at queue time: "Load Diffusion Model": weight_dtype default -> fp8_e4m3fn'
