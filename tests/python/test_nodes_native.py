"""The nodes on the real native modules (skipped while a module is not built): the VAE decode node on
the LibTorch KL decoder and on the native tiler with ComfyUI-style decode functions, interrupts, the
torch-version check, and the explain node / route on the real OOM parser."""
import sys
import types

import pytest
import torch

import fakes
import reference_kl_vae as ref
from conftest import load_pack, run_with_client, real_core_or_skip

ht = pytest.importorskip("_headroom_torch", reason="native torch module not built (HEADROOM_BUILD_DIR)")
PACK = load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


@pytest.fixture(autouse=True)
def real_native():
    native_loader.reset()
    yield
    native_loader.reset()


class KLVae:
    """A ComfyUI-VAE-shaped wrapper of the independent reference decoder (tests/python/reference_kl_vae.py)."""

    def __init__(self, model):
        self.model, self.upscale_ratio = model, 4

    def get_sd(self):
        return ref.state_dict_of(self.model)

    def decode(self, z):
        with torch.no_grad():
            return ref.to_image(self.model(z))


def test_loader_accepts_the_build_for_this_torch():
    assert ht.built_torch_version() == torch.__version__
    assert native_loader.torch_ops() is ht
    assert native_loader.status()["torch"]["available"]


@pytest.mark.parametrize("mode", ["full", "exact"])
def test_decode_node_kl_matches_reference(mode):
    vae = KLVae(ref.random_vae(z_channels=16, widths=(32, 64, 64), blocks=1, seed=3))
    z = torch.randn(1, 16, 12, 10)
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]().decode({"samples": z}, vae, mode=mode, budget="auto")
    image = out["result"][0]
    assert image.shape == (1, 48, 40, 3) and image.dtype == torch.float32
    assert (image - vae.decode(z)).abs().max().item() < 1e-4
    assert out["ui"]["text"][0].startswith(f"kl VAE, {mode} decode")


def test_blend_of_image_tiles_equals_whole_decode():
    # A local decoder (nearest upsampling) blended over overlapping tiles must give the whole decode back.
    vae = fakes.FakeVAE(upscale=8)
    z = torch.randn(1, 4, 80, 72)
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]().decode({"samples": z}, vae, mode="blend", budget="auto")
    whole = vae.decode(z)
    assert out["result"][0].shape == whole.shape == (1, 640, 576, 3)
    assert (out["result"][0] - whole).abs().max().item() < 1e-5
    tiles = vae.decode_calls[:-1]
    assert len(tiles) == 4 and all(t[2] <= 64 and t[3] <= 64 for t in tiles)


def test_blend_of_video_tiles_is_spatial_only():
    vae = fakes.FakeVAE(upscale=8, video=True)
    z = torch.randn(1, 16, 3, 40, 40)
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]().decode({"samples": z}, vae, mode="auto", budget="auto")
    whole = vae.decode(z)
    image = out["result"][0]
    assert image.shape == (9, 320, 320, 3)
    assert (image - whole.reshape(-1, 320, 320, 3)).abs().max().item() < 1e-5
    tiles = vae.decode_calls[:-1]
    assert len(tiles) == 4 and all(t[2] == 3 for t in tiles)  # every tile sees all 3 latent frames


def test_interrupt_between_tiles_raises_comfys_exception(monkeypatch):
    class Interrupted(Exception):
        pass

    mm = types.ModuleType("comfy.model_management")
    mm.OOM_EXCEPTION = MemoryError
    mm.unload_all_models = mm.soft_empty_cache = lambda: None
    mm.processing_interrupted = lambda: True
    mm.get_torch_device = lambda: torch.device("cpu")

    def throw():
        raise Interrupted()
    mm.throw_exception_if_processing_interrupted = throw
    monkeypatch.setitem(sys.modules, "comfy.model_management", mm)
    with pytest.raises(Interrupted):
        PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"]().decode(
            {"samples": torch.randn(1, 4, 80, 72)}, fakes.FakeVAE(), mode="blend", budget="auto")


def test_explain_node_and_route_on_real_core(oom_examples):
    real_core_or_skip()
    text = oom_examples[0]["text"]
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomExplainOOM"]().explain(text)
    # oom-001 asks for "100.00 MiB"; the diagnosis states it at one decimal, as it states every size.
    assert "100.0 MiB more was requested" in out["result"][0]
    assert "Fixes:" in out["result"][0]

    async def post(client):
        r = await client.post("/headroom/explain", json={"text": text})
        return r.status, await r.json()
    status, body = run_with_client(post)
    assert status == 200 and body["requested_bytes"] == oom_examples[0]["expected"]["requested_bytes"]


@pytest.mark.parametrize("config,dim,in_dim,expected", [
    ("Flux", 3072, None, "flux1-dev"), ("FluxSchnell", 3072, None, "flux1-schnell"),
    ("WAN21_T2V", 1536, 16, "wan2.1-t2v-1.3b"), ("WAN22_T2V", 3072, 48, "wan2.2-ti2v-5b"),
    ("WAN21_T2V", 5120, 36, "wan2.2-i2v-a14b"),
])
def test_loaded_model_maps_to_the_real_catalog(config, dim, in_dim, expected):
    """ComfyUI's model-config class names (comfy/supported_models.py) -> the catalog's entries."""
    core = real_core_or_skip()
    from headroom_pack.nodes.comfyui import comfy_adapters
    config_cls = type(config, (), {"unet_config": {"dim": dim, "in_dim": in_dim}})
    model = types.SimpleNamespace(model=types.SimpleNamespace(model_config=config_cls()))
    descriptor = comfy_adapters.model_descriptor(model)
    assert comfy_adapters.catalog_model_name(descriptor, core) == expected


def test_preflight_on_model_and_latent_with_the_real_estimator():
    """Without the prompt (outside ComfyUI) the node estimates MODEL + latent as one job."""
    import json
    core = real_core_or_skip()
    request = {"model": "flux1-dev", "width": 1024, "height": 1024, "frames": 1, "batch": 1, "vram_bytes": 12 * 2**30}
    try:
        expected = json.loads(core.estimate(json.dumps(request)))
    except Exception as e:
        pytest.skip(f"estimate unavailable: {e}")
    config_cls = type("Flux", (), {"unet_config": {}})
    model = types.SimpleNamespace(model=types.SimpleNamespace(model_config=config_cls()))
    latent = {"samples": torch.zeros(1, 16, 128, 128)}
    out = PACK.NODE_CLASS_MAPPINGS["HeadroomPreflight"]().run(latent, budget="12", model=model)
    report = out["result"][1]
    assert out["result"][0] is latent
    assert f"Peak {expected['peak_bytes'] / 2**30:.2f} GiB in {expected['peak_stage']}" in report
    for stage in expected["stages"]:
        assert stage["name"] in report
