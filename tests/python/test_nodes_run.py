"""Each node runs on CPU tensors with ComfyUI absent, against a fake core (canned numbers) so the
node logic is checked on its own; tests against the real native modules are in test_nodes_native.py."""
import sys
import types

import pytest
import torch

import fakes
from conftest import load_pack, natives_installed

PACK = load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402

GIB = 2 ** 30


@pytest.fixture
def no_native():
    with natives_installed(core_cause="headroom_core is not installed (test)",
                           torch_cause="_headroom_torch is not built (test)"):
        yield


def node(name):
    return PACK.NODE_CLASS_MAPPINGS[name]()


API_PROMPT = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors",
                                                          "weight_dtype": "default"}},
              "2": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}}}


def test_preflight_passes_latent_and_reports_fit(fake_core):
    latent = fakes.latent_image()
    out = node("HeadroomPreflight").run(latent, budget="24", action="warn", prompt=API_PROMPT)
    assert out["result"][0] is latent
    report = out["result"][1]
    assert out["ui"]["text"] == [report]
    assert "Verdict: fits" in report and "sample" in report and "20.00 GiB" in report
    kind, request = fake_core.calls[-1]
    assert kind == "plan" and request["workflow"] == API_PROMPT and request["vram_bytes"] == 24 * GIB


def test_preflight_over_budget_warns_with_fix(fake_core):
    out = node("HeadroomPreflight").run(fakes.latent_image(), budget="12GB", action="warn", prompt=API_PROMPT)
    assert "Verdict: does not fit" in out["result"][1] and "weight_dtype fp8_e4m3fn" in out["result"][1]


def test_preflight_stop_raises_before_sampling(fake_core):
    with pytest.raises(RuntimeError, match="stopped the run"):
        node("HeadroomPreflight").run(fakes.latent_image(), budget="12", action="stop", prompt=API_PROMPT)


def test_preflight_gpu_name_budget_goes_to_core(fake_core):
    node("HeadroomPreflight").run(fakes.latent_image(), budget="RTX 4090 24GB", prompt=API_PROMPT)
    assert fake_core.calls[-1][1]["gpu"] == "RTX 4090 24GB"


def test_preflight_auto_budget_on_cpu_has_no_verdict(fake_core, monkeypatch):
    monkeypatch.delenv("HEADROOM_BUDGET", raising=False)
    out = node("HeadroomPreflight").run(fakes.latent_image(), budget="auto", prompt=API_PROMPT)
    assert "Verdict: no card given" in out["result"][1]
    assert "vram_bytes" not in fake_core.calls[-1][1]


def test_preflight_without_native_reports_cause_and_passes(no_native):
    latent = fakes.latent_image()
    out = node("HeadroomPreflight").run(latent, budget="12", action="stop", prompt=API_PROMPT)
    assert out["result"][0] is latent
    assert "not installed" in out["result"][1] and "install.py" in out["result"][1]


def test_preflight_rejects_non_latent(fake_core):
    with pytest.raises(ValueError, match="samples"):
        node("HeadroomPreflight").run({"x": 1}, prompt=API_PROMPT)


def test_preflight_bad_budget_is_reported(fake_core):
    out = node("HeadroomPreflight").run(fakes.latent_image(), budget="-3", prompt=API_PROMPT)
    assert "budget" in out["result"][1] and not fake_core.calls


class FakeTorchOps:
    """The _headroom_torch surface: records calls, decodes by nearest upsampling."""

    def __init__(self, family="kl", oom_first=False):
        self.family, self.oom_first, self.calls = family, oom_first, []

    def detect_vae_family(self, sd):
        if self.family is None:
            raise ValueError("vae: not a KL or Wan VAE")
        return self.family

    def decode(self, sd, latent, mode="auto", tile_px=0, budget_bytes=None, device=None, dtype=None,
               progress=None, cancel=None):
        self.calls.append(("decode", mode, budget_bytes))
        if self.oom_first and len(self.calls) == 1:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        progress(1, 2)
        progress(2, 2)
        img = latent[:, :3].repeat_interleave(8, -1).repeat_interleave(8, -2).movedim(1, -1)
        return img, {"family": self.family, "mode": mode, "tiles": 2, "planned_peak_bytes": GIB}

    def decode_blend(self, fn, latent, tile_latent, overlap_latent, upscale, progress=None, cancel=None):
        self.calls.append(("blend", tile_latent, overlap_latent, upscale))
        return fn(latent)


def test_vae_decode_native_kl(fake_core):
    ops = FakeTorchOps("kl")
    native_loader._cache[native_loader.TORCH_MODULE] = (ops, None)
    out = node("HeadroomVAEDecode").decode(fakes.latent_image(h=4, w=5), fakes.FakeVAE(), mode="exact", budget="2")
    image = out["result"][0]
    assert image.shape == (1, 32, 40, 3)
    assert ops.calls == [("decode", "exact", 2 * GIB)]
    assert "kl VAE, exact decode" in out["ui"]["text"][0]


def test_vae_decode_retries_tiled_after_oom(fake_core):
    ops = FakeTorchOps("kl", oom_first=True)
    native_loader._cache[native_loader.TORCH_MODULE] = (ops, None)
    out = node("HeadroomVAEDecode").decode(fakes.latent_image(), fakes.FakeVAE(), mode="full", budget="8")
    assert [c[1] for c in ops.calls] == ["full", "exact"]
    assert "retried tiled" in out["ui"]["text"][0]


def test_vae_decode_other_vae_uses_comfy_decode_through_blend_spatial_only(fake_core):
    ops = FakeTorchOps(family=None)
    native_loader._cache[native_loader.TORCH_MODULE] = (ops, None)
    vae = fakes.FakeVAE(upscale=8, video=True)
    latent = fakes.latent_video(t=3, h=6, w=6)
    out = node("HeadroomVAEDecode").decode(latent, vae, mode="auto", budget="8")
    image = out["result"][0]
    # ComfyUI's IMAGE for video: 4*3-3 = 9 frames flattened into the batch.
    assert image.shape == (9, 48, 48, 3)
    # Spatial tiles of 256 px // 8 = 32 latent px with a quarter overlap; time factor 4 from the VAE's lambda.
    assert ops.calls[0] == ("blend", 32, 8, [4, 8, 8])
    # The whole clip (all 3 latent frames) reaches ComfyUI's decode: no temporal tiles.
    assert vae.decode_calls[0][2] == 3


def test_vae_decode_without_native_falls_back_to_comfys_tiled_decode(no_native):
    vae = fakes.FakeVAE()
    out = node("HeadroomVAEDecode").decode(fakes.latent_image(h=2, w=3), vae, mode="auto", budget="8")
    assert out["result"][0].shape == (1, 16, 24, 3)
    assert len(vae.tiled_calls) == 1 and len(vae.decode_calls) == 1  # never one whole, unbudgeted decode
    text = out["ui"]["text"][0]
    assert "ComfyUI tiled decode" in text and "native decoder is unavailable" in text and "install.py" in text


def test_vae_decode_honours_interrupt(fake_core, monkeypatch):
    class Interrupted(Exception):
        pass

    mm = types.ModuleType("comfy.model_management")
    mm.OOM_EXCEPTION = torch.cuda.OutOfMemoryError if hasattr(torch.cuda, "OutOfMemoryError") else MemoryError
    mm.processing_interrupted = lambda: True
    mm.unload_all_models = lambda: None
    mm.soft_empty_cache = lambda: None

    def throw():
        raise Interrupted()
    mm.throw_exception_if_processing_interrupted = throw
    monkeypatch.setitem(sys.modules, "comfy.model_management", mm)

    class CancellingOps(FakeTorchOps):
        def decode(self, sd, latent, cancel=None, **kw):
            if cancel():
                raise RuntimeError("decode cancelled")
    native_loader._cache[native_loader.TORCH_MODULE] = (CancellingOps("kl"), None)
    with pytest.raises(Interrupted):
        node("HeadroomVAEDecode").decode(fakes.latent_image(), fakes.FakeVAE(), budget="8")


def test_vae_decode_evicts_models_first(fake_core, monkeypatch):
    order = []
    mm = types.ModuleType("comfy.model_management")
    mm.OOM_EXCEPTION = MemoryError
    mm.processing_interrupted = lambda: False
    mm.unload_all_models = lambda: order.append("unload")
    mm.soft_empty_cache = lambda: order.append("empty")
    mm.throw_exception_if_processing_interrupted = lambda: None
    monkeypatch.setitem(sys.modules, "comfy.model_management", mm)

    class Ops(FakeTorchOps):
        def decode(self, *a, **kw):
            order.append("decode")
            return super().decode(*a, **kw)
    native_loader._cache[native_loader.TORCH_MODULE] = (Ops("kl"), None)
    node("HeadroomVAEDecode").decode(fakes.latent_image(), fakes.FakeVAE(), budget="8")
    assert order == ["unload", "empty", "decode"]


def test_loader_auto_picks_fp8_when_16bit_does_not_fit(fake_core):
    from headroom_pack.nodes.graph import loader
    dtype, why = loader.choose_dtype("/models/flux1-dev.safetensors", 1024, 1024, 1, 1, budget="16")
    assert dtype == "fp8_e4m3fn"
    assert "20.00 GiB" in why and "10.00 GiB" in why and "fits" in why
    precisions = [r.get("precision") for k, r in fake_core.calls if k == "estimate"]
    assert precisions == ["bf16", "fp8_e4m3fn"]


def test_loader_auto_keeps_16bit_when_it_fits(fake_core):
    from headroom_pack.nodes.graph import loader
    dtype, why = loader.choose_dtype("/models/flux1-dev.safetensors", 1024, 1024, 1, 1, budget="24")
    assert dtype == "default" and "fit" in why


def test_explain_node_uses_text(fake_core):
    out = node("HeadroomExplainOOM").explain("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB")
    assert "the model filled the card" in out["result"][0] and "use fp8 weights" in out["result"][0]


def test_explain_node_without_text_or_history(fake_core):
    out = node("HeadroomExplainOOM").explain("")
    assert "No error text" in out["result"][0]


def test_vram_snapshot_passthrough_on_cpu():
    value = torch.ones(2)
    out = node("HeadroomVRAMSnapshot").snapshot(value)
    assert out["result"][0] is value
    report = out["result"][1]
    assert "Device:" in report and "Other processes" in report


def test_preflight_core_error_is_reported_not_raised(fake_core):
    def broken(text):
        raise RuntimeError("plan: not implemented yet")
    fake_core.plan = broken
    latent = fakes.latent_image()
    out = node("HeadroomPreflight").run(latent, budget="12", action="warn", prompt=API_PROMPT)
    assert out["result"][0] is latent and "not implemented" in out["result"][1]
    # "stop" stops over-budget runs; an estimate that failed does not say the run is over budget.
    out = node("HeadroomPreflight").run(latent, budget="12", action="stop", prompt=API_PROMPT)
    assert out["result"][0] is latent and "could not estimate" in out["result"][1]


def test_loader_node_loads_through_comfy_with_the_chosen_dtype(fake_core, monkeypatch):
    calls = []
    folder_paths = types.ModuleType("folder_paths")
    folder_paths.get_filename_list = lambda kind: ["flux1-dev.safetensors"]
    folder_paths.get_full_path_or_raise = lambda kind, name: f"/models/{kind}/{name}"
    comfy = types.ModuleType("comfy")
    comfy_sd = types.ModuleType("comfy.sd")
    comfy_sd.load_diffusion_model = lambda path, model_options=None: calls.append((path, model_options)) or "MODEL"
    comfy.sd = comfy_sd
    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths)
    monkeypatch.setitem(sys.modules, "comfy", comfy)
    monkeypatch.setitem(sys.modules, "comfy.sd", comfy_sd)
    cls = PACK.NODE_CLASS_MAPPINGS["HeadroomLoadDiffusionModel"]
    assert cls.INPUT_TYPES()["required"]["unet_name"][0] == ["flux1-dev.safetensors"]
    # torch 1.13 (Debian) has no fp8: auto says so and keeps the default dtype.
    monkeypatch.delattr(torch, "float8_e4m3fn", raising=False)
    out = cls().load("flux1-dev.safetensors", "auto", 1024, 1024, 1, 1, "16")
    assert calls[-1][1] == {} and "no fp8 dtypes" in out["result"][1]
    # With an fp8-capable torch the choice reaches ComfyUI's loader.
    monkeypatch.setattr(torch, "float8_e4m3fn", "FP8_E4M3", raising=False)
    monkeypatch.setattr(torch, "float8_e5m2", "FP8_E5M2", raising=False)
    calls.clear()
    out = cls().load("flux1-dev.safetensors", "auto", 1024, 1024, 1, 1, "16")
    assert out["result"][0] == "MODEL" and "fp8 weights peak" in out["result"][1]
    assert calls == [("/models/diffusion_models/flux1-dev.safetensors", {"dtype": "FP8_E4M3"})]
    cls().load("flux1-dev.safetensors", "default", 1024, 1024, 1, 1, "16")
    assert calls[-1][1] == {}


def test_explain_node_reads_the_last_failed_run_from_comfy_history(fake_core, monkeypatch):
    # ComfyUI's PromptQueue.history: prompt_id -> {"status": {"status_str", "messages": [[event, data]]}}.
    server = types.ModuleType("server")
    history = {
        "a": {"status": {"status_str": "error", "messages": [["execution_start", {}], ["execution_error", {
            "exception_type": "torch.OutOfMemoryError", "exception_message": "CUDA out of memory. Tried to allocate 1 GiB"}]]}},
        "b": {"status": {"status_str": "success", "messages": [["execution_start", {}]]}},
    }
    server.PromptServer = types.SimpleNamespace(instance=types.SimpleNamespace(
        prompt_queue=types.SimpleNamespace(history=history)))
    monkeypatch.setitem(sys.modules, "server", server)
    out = node("HeadroomExplainOOM").explain("")
    assert fake_core.calls[-1][0] == "explain"
    assert fake_core.calls[-1][1].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
                                             "headroom-context: app=comfyui")
    assert "the model filled the card" in out["result"][0]


def test_loader_auto_reports_unreadable_files(fake_core, monkeypatch):
    from headroom_pack.nodes.graph import loader
    fake_core.inspect = lambda paths: '[{"path": "/m/x.safetensors", "error": "x.safetensors: header length 9e18 is larger than the file", "error_kind": "malformed"}]'
    with pytest.raises(ValueError, match="header length"):
        loader.choose_dtype("/m/x.safetensors", 1024, 1024, 1, 1, budget="16")
