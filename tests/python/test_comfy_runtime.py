"""Runtime detection against stand-ins of the ComfyUI modules that decide it: comfy.cli_args (the flags),
comfy.memory_management (aimdo_enabled, set by main.py once comfy-aimdo really started) and
comfyui_version. The stand-ins carry only those names, as ComfyUI 0.3.64 (legacy, no
memory_management) and ComfyUI >= 0.15 (dynamic) define them."""
import sys

import pytest

from conftest import load_pack

load_pack()
from headroom_pack.nodes.comfyui import comfy_runtime  # noqa: E402

GIB = 1024 ** 3


@pytest.fixture
def comfy(comfy_standin):
    """install(version, aimdo, **cli_args): the shared stand-in (conftest.comfy_standin)."""
    return comfy_standin


def test_no_comfyui_leaves_the_runtime_to_the_caller(monkeypatch):
    for name in ("comfy.cli_args", "comfy.model_management", "comfy.memory_management"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    info = comfy_runtime.detect()
    assert info["runtime"] is None
    assert comfy_runtime.request_fields(info) == {}


def test_comfyui_0_3_64_is_legacy(comfy):
    comfy("0.3.64", None, reserve_vram=1.5)
    info = comfy_runtime.detect()
    assert info["runtime"] == "legacy"
    assert "before 0.15" in info["reason"]
    assert info["comfyui_version"] == "0.3.64"
    assert info["reserve_vram_bytes"] == int(1.5 * GIB)
    fields = comfy_runtime.request_fields(info)
    assert fields["runtime"] == "legacy"
    assert fields["reserve_bytes"] == int(1.5 * GIB)


def test_dynamic_vram_on_with_its_knobs(comfy):
    comfy("0.38.1", True, vram_headroom=0.75, reserve_vram=2.0, disable_pinned_memory=True)
    info = comfy_runtime.detect()
    assert info["runtime"] == "dynamic"
    assert info["vram_headroom_bytes"] == int(0.75 * GIB)
    assert info["reserve_vram_bytes"] == 2 * GIB
    assert info["pinned_memory"] is False
    fields = comfy_runtime.request_fields(info)
    assert fields == {"runtime": "dynamic", "vram_headroom_bytes": int(0.75 * GIB), "reserve_bytes": 2 * GIB,
                      "windows": sys.platform == "win32", "pinned_memory": False,
                      **({"ram_bytes": info["ram_bytes"]} if info["ram_bytes"] else {}),
                      **({"swap_bytes": info["swap_bytes"]} if info["ram_bytes"] and info["swap_bytes"] is not None
                         else {})}


@pytest.mark.parametrize("flags, num_streams, expected", [
    ({}, None, None),                                  # nothing says: the core's default (2)
    ({"async_offload": 4}, None, 4),                   # --async-offload 4
    ({"async_offload": None, "disable_async_offload": True}, None, 0),
    ({"async_offload": 4}, 1, 1),                      # what model_management settled on wins
])
def test_offload_streams_follow_comfyui(comfy, flags, num_streams, expected):
    """comfy/cli_args.py@03294572 --async-offload NUM_STREAMS / --disable-async-offload, and
    comfy.model_management.NUM_STREAMS once ComfyUI computed it: what the core prices the streaming
    working set with (offload_streams)."""
    comfy("0.38.1", True, **flags)
    if num_streams is not None:
        sys.modules["comfy.model_management"].NUM_STREAMS = num_streams
    info = comfy_runtime.detect()
    assert info["offload_streams"] == expected
    fields = comfy_runtime.request_fields(info)
    assert fields.get("offload_streams") == expected


def test_aimdo_as_a_function_is_read_too(comfy):
    comfy("0.30.2", lambda: True)
    assert comfy_runtime.detect()["runtime"] == "dynamic"


@pytest.mark.parametrize("flag", ["disable_dynamic_vram", "highvram", "gpu_only", "novram"])
def test_flags_that_keep_the_legacy_loader_are_named(comfy, flag):
    comfy("0.38.1", False, **{flag: True})
    info = comfy_runtime.detect()
    assert info["runtime"] == "legacy"
    assert "--" + flag.replace("_", "-") in info["reason"]


def test_aimdo_that_did_not_start_is_legacy_without_a_flag(comfy):
    comfy("0.38.1", False)
    info = comfy_runtime.detect()
    assert info["runtime"] == "legacy"
    assert "did not start" in info["reason"]


@pytest.mark.parametrize("bad", [float("nan"), -1.0, 1e9, "lots"])
def test_nonsense_knob_values_are_not_a_budget(comfy, bad):
    comfy("0.38.1", True, vram_headroom=bad, reserve_vram=bad)
    info = comfy_runtime.detect()
    assert info["vram_headroom_bytes"] == 0
    assert info["reserve_vram_bytes"] is None


def test_host_ram_is_read_on_this_machine():
    total, free = comfy_runtime._ram()
    assert total is not None and total > 0
    assert free is not None and 0 < free <= total
