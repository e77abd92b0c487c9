"""Explain OOM inside ComfyUI (issue 13, item 14): the pack tells the core that the error happened in
ComfyUI on this OS, so a bare PyTorch message gets ComfyUI's levers (weight_dtype, VAE Decode (Headroom),
batch, resolution, launch flags) rather than torch calls, and expandable_segments only where it works."""
import json

import pytest

import fakes
from conftest import load_pack, native_core_or_none, natives_installed

load_pack()
from headroom_pack.nodes.graph import explain  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402

FRAGMENTED = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 884.00 MiB. GPU 0 has a total capacity "
              "of 12.00 GiB of which 38.73 MiB is free. Of the allocated memory 6.68 GiB is allocated by PyTorch, and "
              "3.96 GiB is reserved by PyTorch but unallocated.")
TOO_BIG = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "12.00 GiB of which 120.00 MiB is free. Of the allocated memory 11.20 GiB is allocated by PyTorch, and "
           "40.00 MiB is reserved by PyTorch but unallocated.")


@pytest.mark.parametrize("system,line", [("Linux", "headroom-context: app=comfyui os=linux"),
                                         ("Windows", "headroom-context: app=comfyui os=windows"),
                                         ("Darwin", "headroom-context: app=comfyui os=macos"),
                                         ("Plan9", "headroom-context: app=comfyui")])
def test_context_line_names_comfyui_and_the_os(system, line):
    assert explain.context_line(system) == line


def test_node_and_route_send_the_context(monkeypatch):
    with natives_installed(fakes.FakeCore()) as core:
        explain.HeadroomExplainOOM().explain(TOO_BIG)
    sent = core.calls[-1][1]
    assert sent.startswith(TOO_BIG + "\n") and explain.context_line() in sent.splitlines()


def _real_core_with_context():
    core = native_core_or_none()
    if core is None:
        pytest.skip("the core library is not built")
    if "os" not in json.loads(core.explain("x")):
        pytest.skip("the built core library predates the context line (rebuild: scripts/build.sh)")
    return core


def _fix_text(result):
    return "\n".join(f["text"] for f in result["fixes"])


@pytest.fixture
def real_core():
    core = _real_core_with_context()
    native_loader.reset()
    yield core
    native_loader.reset()


def test_bare_pytorch_message_gets_comfyui_levers(real_core, monkeypatch):
    monkeypatch.setattr(explain.platform, "system", lambda: "Linux")
    result = explain.explain_text(TOO_BIG)
    text = _fix_text(result)
    assert result["app"] == "comfyui" and result["diagnosis"]["id"] == "out_of_memory"
    assert "torch." not in text and "inference_mode" not in text
    for lever in ("weight_dtype", "VAE Decode (Headroom)", "batch_size", "--reserve-vram"):
        assert lever in text


@pytest.mark.parametrize("system", ["Linux", "Windows"])
def test_fragmentation_fixes_fit_the_os(real_core, monkeypatch, system):
    monkeypatch.setattr(explain.platform, "system", lambda: system)
    result = explain.explain_text(FRAGMENTED)
    text = _fix_text(result)
    assert result["diagnosis"]["id"] == "fragmentation"
    assert "torch.cuda.empty_cache" not in text
    assert not any(f.get("preset") for f in result["fixes"])  # "fit this card" does not answer fragmentation
    if system == "Linux":
        assert result["fixes"][0]["id"] == "expandable_segments" and "Windows" not in text
    else:
        assert "expandable_segments" not in text and result["fixes"][0]["id"] == "max_split_size"


# Issue 22: what the node and the toast are handed for failures that never say "CUDA out of memory" is
# ComfyUI's "exception_type: exception_message" (comfy_adapters.last_execution_error). The core's answer is
# rendered as is, in ComfyUI's terms.
DYNAMIC_VRAM_FAILURES = [
    # Comfy-Org/ComfyUI#16225 (2026-09-10): RTX 5060 Laptop, fixed by --disable-dynamic-vram.
    ("MemoryError: VBAR allocation failed", "dynamic_vram_address_space", "--disable-dynamic-vram"),
    # Comfy-Org/ComfyUI#15269 (2026-08-03): the second generation with QwenImage.
    ("RuntimeError: Fault failed: 2", "dynamic_vram_fault", "Queue the prompt again"),
    # Comfy-Org/ComfyUI#14250 (2026-06-03): fixed by --disable-pinned-memory.
    ("RuntimeError: HostBuffer.read_file_slice failed", "pinned_memory", "--disable-pinned-memory"),
]


@pytest.mark.parametrize("text,diagnosis,lever", DYNAMIC_VRAM_FAILURES)
def test_explain_node_shows_dynamic_vram_failures(real_core, monkeypatch, text, diagnosis, lever):
    monkeypatch.setattr(explain.platform, "system", lambda: "Windows")
    result = explain.explain_text(text)
    assert result["recognised"] is True and result["app"] == "comfyui"
    assert result["diagnosis"]["id"] == diagnosis
    fixes = _fix_text(result)
    assert lever in fixes and "torch." not in fixes
    assert all("Costs:" in f["text"] or "costs:" in f["text"] for f in result["fixes"])
    out = explain.HeadroomExplainOOM().explain(text)["ui"]["text"][0]
    assert result["diagnosis"]["text"] in out and lever in out and "Not recognised" not in out


def test_explain_node_keeps_non_memory_errors_unrecognised(real_core):
    # darksidewalker/ComfyUI-DaSiWa-Nodes#13 (2026-08-07): a custom node's KeyError, as the node gets it.
    result = explain.explain_text("KeyError: 'imd'")
    assert result["recognised"] is False and result["fixes"] == []
    assert explain.format_explanation(result).startswith("Not recognised")


# Issue 22: the node says which loader ran (comfy_runtime's aimdo detection) and hands over the console.
@pytest.mark.parametrize("aimdo,loader", [(True, "dynamic"), (False, "legacy")])
def test_context_line_names_the_loader_comfyui_runs(comfy_standin, aimdo, loader):
    comfy_standin("0.15.0", aimdo)
    assert explain.context_line("Linux") == f"headroom-context: app=comfyui os=linux loader={loader}"


def test_the_core_reads_the_loader_of_the_context(real_core, comfy_standin, monkeypatch):
    monkeypatch.setattr(explain.platform, "system", lambda: "Linux")
    comfy_standin("0.15.0", True)
    assert explain.explain_text(TOO_BIG)["extra"].get("comfy_dynamic_vram") is True
    comfy_standin("0.15.0", False)
    assert explain.explain_text(TOO_BIG)["extra"].get("comfy_dynamic_vram") is False


def _console(monkeypatch, writes):
    import sys
    import types
    logger = types.ModuleType("app.logger")
    logger.get_logs = lambda: [{"t": "2026-12-01T00:00:00", "m": m} for m in writes]
    monkeypatch.setitem(sys.modules, "app.logger", logger)


# ComfyUI's comfy/sd.py warning when a regular decode ran out (issue 22's tiled-retry family), as its
# console prints it: split over writes, progress bars overwritten with \r.
TILED_RETRY = ["Requested to load AutoencodingEngine\n", "100%|##########| 20/20\r",
               "Warning: Ran out of memory when regular VAE decoding, retrying with tiled VAE decoding.\n"]


def test_without_text_the_node_sends_the_console_tail(monkeypatch):
    _console(monkeypatch, TILED_RETRY)
    with natives_installed(fakes.FakeCore()) as core:
        explain.HeadroomExplainOOM().explain("")
    sent = core.calls[-1][1]
    assert "Requested to load AutoencodingEngine" in sent and "retrying with tiled VAE decoding" in sent


def test_a_pasted_error_is_explained_without_the_console(monkeypatch):
    _console(monkeypatch, TILED_RETRY)
    with natives_installed(fakes.FakeCore()) as core:
        explain.HeadroomExplainOOM().explain(TOO_BIG)
    assert "retrying with tiled" not in core.calls[-1][1]


def test_the_console_tail_alone_is_recognised_by_the_core(real_core, monkeypatch):
    _console(monkeypatch, TILED_RETRY)
    out = explain.HeadroomExplainOOM().explain("")["ui"]["text"][0]
    assert "Not recognised" not in out and "No error text" not in out
