"""One set of runtime defaults (issue 23 point 6): the CLI, the JSON API (C library) and the nodes outside
a live ComfyUI answer the same workflow with the same loader, verdict and figures. Before, the CLI
assumed dynamic VRAM and the JSON API the legacy loader, so FLUX.1 dev on 24 GB 'fits' in one and
not in the other."""
import json
import subprocess
import sys

import pytest

from conftest import BUILD_DIR, load_pack, native_core_or_none

load_pack()
from headroom_pack.nodes.comfyui import comfy_adapters  # noqa: E402

GIB = 1024 ** 3
CLI = BUILD_DIR / "headroom"
KEYS = ("runtime", "verdict", "peak_bytes", "required_bytes", "full_load_peak_bytes")


def _same(a: dict, b: dict):
    for key in KEYS:
        if key in a or key in b:
            assert a.get(key) == b.get(key), f"{key}: CLI {a.get(key)!r}, JSON {b.get(key)!r}"


@pytest.mark.parametrize("name", ["flux_dev_checkpoint_example.json", "video_wan2_2_14B_t2v.json"])
def test_cli_and_json_plan_agree_without_runtime_fields(real_workflows, name, monkeypatch):
    core = native_core_or_none()
    if core is None or not CLI.is_file():
        pytest.skip("the CLI and the core library are not both built")
    path = real_workflows / "2026" / name
    cli = json.loads(subprocess.run([str(CLI), "plan", str(path), "--vram", "24", "--json"], capture_output=True,
                                    text=True, timeout=120, check=True).stdout)
    # What the nodes send outside ComfyUI: with_runtime adds nothing, the core's defaults apply.
    for mod in ("comfy.cli_args", "comfy.model_management", "comfy.memory_management"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    request = comfy_adapters.with_runtime({"workflow": json.loads(path.read_text()), "source": str(path),
                                           "vram_bytes": 24 * GIB})
    assert set(request) == {"workflow", "source", "vram_bytes"}
    api = json.loads(core.plan(json.dumps(request)))
    assert cli["runtime"] == api["runtime"] == "dynamic"
    _same(cli, api)


def test_cli_and_json_estimate_agree_on_the_flags_they_share():
    core = native_core_or_none()
    if core is None or not CLI.is_file():
        pytest.skip("the CLI and the core library are not both built")
    flags = ["--async-offload", "4", "--os", "windows", "--runtime", "dynamic"]
    cli = json.loads(subprocess.run([str(CLI), "estimate", "--model", "flux1-dev", "--vram", "8", "--json", *flags],
                                    capture_output=True, text=True, timeout=60, check=True).stdout)
    api = json.loads(core.estimate(json.dumps({"model": "flux1-dev", "vram_bytes": 8 * GIB, "offload_streams": 4,
                                               "windows": True, "runtime": "dynamic"})))
    _same(cli, api)
    default = json.loads(core.estimate(json.dumps({"model": "flux1-dev", "vram_bytes": 8 * GIB})))
    assert default["required_bytes"] < api["required_bytes"]  # two more stored layers in flight
