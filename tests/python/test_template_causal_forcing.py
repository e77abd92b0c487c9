"""The official Causal Forcing template (video_causal_forcing_i2v, issue 19's 2026 Wan families) planned end to end:
its UNETLoader file is read as causal-forcing-1.3b, ARVideoI2V sizes the latent (832 x 480 x 81), and the
SamplerARVideo feeding SamplerCustomAdvanced makes the sample stage block-by-block with a k/v cache. The figures
are the formula's, worked out by hand: k/v cache = 30 blocks x 2 x 32,760 tokens x 1536 x 2 B."""
import copy
import importlib.resources
import json
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_DIR

NAME = "video_causal_forcing_i2v"
KV_CACHE = 30 * 2 * 32760 * 1536 * 2  # 6,038,323,200 B at 832 x 480 x 81
ACTIVATION_BYTES_PER_TOKEN = (2 * 1536 + 2 * 8960) * 2  # the Wan FFN phase, fp16
GIB = 1 << 30


def _template():
    try:
        folder = importlib.resources.files("comfyui_workflow_templates_json") / "templates"
    except ModuleNotFoundError:
        pytest.skip("comfyui-workflow-templates-json is not installed")
    path = Path(str(folder)) / f"{NAME}.json"
    if not path.exists():
        pytest.fail(f"the pinned templates package has no {path.name}")
    return json.loads(path.read_text())


def _cli():
    cli = BUILD_DIR / "headroom"
    if not cli.exists():
        pytest.skip(f"{cli} is not built")
    return cli


def _plan(workflow, tmp_path, vram="12"):
    path = tmp_path / f"{NAME}.json"
    path.write_text(json.dumps(workflow))
    run = subprocess.run([str(_cli()), "plan", "--json", "--vram", vram, str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode in (0, 1, 3), run.stderr[-500:]
    return json.loads(run.stdout)


def _sample(answer):
    return next(s for s in answer["stages"] if s["name"] == "sample")


def _ar_sampler(workflow):
    for graph in workflow["definitions"]["subgraphs"]:
        for node in graph["nodes"]:
            if node["type"] == "SamplerARVideo":
                return node
    raise AssertionError("the template has no SamplerARVideo")


def test_the_template_is_read_with_its_own_model_shape_and_sampler(tmp_path):
    answer = _plan(_template(), tmp_path)
    job = answer["job"]
    assert job["diffusion"]["model"] == "causal-forcing-1.3b"
    assert job["diffusion"]["file"] == "causal_forcing-framewise.safetensors"
    assert (job["width"], job["height"], job["frames"], job["batch"]) == (832, 480, 81, 1)
    assert job["cfg"] == 1.0
    assert (job["sampling"], job["block_frames"]) == ("kv_cache_blocks", 1)
    sample = _sample(answer)
    assert sample["breakdown"]["kv_cache"] == KV_CACHE
    assert sample["breakdown"]["cross_attention_cache"] == 30 * 2 * 512 * 1536 * 2
    assert sample["breakdown"]["activations"] == ACTIVATION_BYTES_PER_TOKEN * 1560
    # The fp32 file's 1,418,996,800 weights are held in fp16 (ComfyUI's unet_dtype for Wan).
    assert sample["breakdown"]["weights:causal-forcing-1.3b"] == 1418996800 * 2
    assert answer["verdict"] in {"fits", "tight"}, answer.get("reason")
    assert answer["peak_bytes"] < 12 * GIB


def test_the_frames_per_block_widget_sizes_the_pass_not_the_cache(tmp_path):
    workflow = _template()
    framewise = _sample(_plan(workflow, tmp_path))
    chunked = copy.deepcopy(workflow)
    _ar_sampler(chunked)["widgets_values"] = [3]
    chunkwise = _plan(chunked, tmp_path)
    assert chunkwise["job"]["block_frames"] == 3
    assert _sample(chunkwise)["breakdown"]["kv_cache"] == framewise["breakdown"]["kv_cache"]
    assert _sample(chunkwise)["breakdown"]["activations"] == 3 * framewise["breakdown"]["activations"]


@pytest.mark.parametrize("value", [0, 65, "three"])
def test_a_frames_per_block_outside_comfyuis_range_is_bad_input_naming_the_node(tmp_path, value):
    workflow = _template()
    _ar_sampler(workflow)["widgets_values"] = [value]
    path = tmp_path / f"{NAME}.json"
    path.write_text(json.dumps(workflow))
    run = subprocess.run([str(_cli()), "plan", "--json", "--vram", "12", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2, run.stdout[-300:]
    assert "SamplerARVideo #29:12 num_frame_per_block" in run.stderr


# The CLI names a request field by its flag.
CF = ["--model", "causal-forcing-1.3b"]


@pytest.mark.parametrize("flags, flag", [
    (CF + ["--block-frames", "0"], "--block-frames"),
    (CF + ["--block-frames", "65"], "--block-frames"),
    (CF + ["--sampling", "autoregressive"], "--sampling"),
    (CF + ["--sampling", "standard", "--block-frames", "3"], "--block-frames"),
    (["--model", "flux1-dev", "--sampling", "kv_cache_blocks"], "sampling"),
])
def test_bad_sampling_flags_exit_2_naming_the_field(flags, flag):
    run = subprocess.run([str(_cli()), "estimate", "--vram", "12", *flags], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stdout[-300:] + run.stderr[-300:]
    assert flag in run.stderr
