"""The pack's real route handlers on a real aiohttp server (127.0.0.1, ephemeral port): answers,
400s for bad bodies, refusal of paths outside the model folders, and the websocket push cadence."""
import asyncio
import json
import re

import pytest

import fakes
from conftest import REPO, load_pack, run_with_client

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import routes, settings  # noqa: E402


WORKFLOW = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors",
                                                        "weight_dtype": "default"}}}


# /headroom/estimate is /headroom/plan's old name, kept for users' scripts: both run the core's plan.
@pytest.mark.parametrize("path", ["/headroom/plan", "/headroom/estimate"])
def test_plan_route_returns_the_cores_plan(fake_core, path):
    async def check(client):
        r = await client.post(path, json={"workflow": WORKFLOW, "budget": 12})
        return r.status, await r.json()
    status, body = run_with_client(check)
    assert status == 200 and body["peak_bytes"] == fake_core.peak and body["verdict"] == "does not fit"
    assert fake_core.calls[-1][1] == {"workflow": WORKFLOW, "vram_bytes": 12 * 2**30}


def test_the_web_calls_the_plan_by_its_name():
    web = {p.name: p.read_text() for p in (REPO / "web").glob("*.js")}
    assert any('"/headroom/plan"' in text for text in web.values())
    assert [name for name, text in web.items() if "/headroom/estimate" in text] == []


def test_every_route_is_documented_and_every_documented_route_exists():
    from headroom_pack.nodes.server import calibration_routes
    served = {f"{method} {path}" for method, path, _ in routes.ROUTES + calibration_routes.ROUTES}
    table = (REPO / "docs" / "nodes.md").read_text()
    documented = set(re.findall(r"^\| `((?:GET|POST) /headroom/[\w/-]+)`", table, re.M))
    assert documented == served, (sorted(served - documented), sorted(documented - served))


@pytest.mark.parametrize("path,payload,field", [
    ("/headroom/plan", b"not json", "body"),
    ("/headroom/plan", b"[1,2]", "body"),
    ("/headroom/plan", json.dumps({"workflow": []}).encode(), "workflow"),
    ("/headroom/plan", json.dumps({"workflow": WORKFLOW, "vram_bytes": -5}).encode(), "vram_bytes"),
    ("/headroom/estimate", json.dumps({"workflow": WORKFLOW, "budget": [1]}).encode(), "budget"),
    ("/headroom/apply-preset", json.dumps({"workflow": WORKFLOW}).encode(), "preset"),
    ("/headroom/explain", json.dumps({"text": ""}).encode(), "text"),
    ("/headroom/settings", json.dumps({"queue_action": "explode"}).encode(), "queue_action"),
    ("/headroom/settings", json.dumps({"refresh_s": 0}).encode(), "refresh_s"),
    ("/headroom/panel", json.dumps({"open": "yes"}).encode(), "open"),
    ("/headroom/inspect", json.dumps({"paths": "x"}).encode(), "paths"),
])
def test_bad_bodies_get_400_naming_the_field(fake_core, path, payload, field):
    async def check(client):
        r = await client.post(path, data=payload, headers={"Content-Type": "application/json"})
        return r.status, await r.json()
    status, body = run_with_client(check)
    assert status == 400 and body["error"].startswith(field), body


def test_core_input_error_becomes_400(fake_core):
    def bad_plan(text):
        raise fakes.FakeCore.InputError("workflow: node 7 has no class_type")
    fake_core.plan = bad_plan

    async def check(client):
        r = await client.post("/headroom/plan", json={"workflow": {"7": {}}})
        return r.status, await r.json()
    status, body = run_with_client(check)
    assert status == 400 and "node 7" in body["error"]


def test_missing_native_is_503_with_fix():
    native_loader.reset()
    native_loader._cache[native_loader.CORE_MODULE] = (None, "headroom_core is not installed (test)")
    try:
        async def check(client):
            r = await client.get("/headroom/presets")
            return r.status, await r.json()
        status, body = run_with_client(check)
    finally:
        native_loader.reset()
    assert status == 503 and "not installed" in body["error"] and "install.py" in body["fix"]


def test_presets_apply_preset_explain_vram(fake_core):
    async def check(client):
        presets = await (await client.get("/headroom/presets")).json()
        applied = await (await client.post("/headroom/apply-preset",
                                           json={"workflow": WORKFLOW, "preset": "fp8-weights", "gpu": "RTX 3060 12GB"})).json()
        explained = await (await client.post("/headroom/explain", json={"text": "CUDA out of memory"})).json()
        vram = await client.get("/headroom/vram")
        return presets, applied, explained, vram.status, await vram.json()
    presets, applied, explained, vram_status, vram = run_with_client(check)
    assert presets["presets"][0]["name"] == "fp8-weights"
    assert applied["before"]["peak_bytes"] > applied["after"]["peak_bytes"]
    # The message as sent, then the line that says where it happened (native/core/oom/oom_parse.hpp).
    assert fake_core.calls[-1][0] == "explain"
    assert fake_core.calls[-1][1].startswith("CUDA out of memory\nheadroom-context: app=comfyui")
    assert ("apply_preset", {"workflow": WORKFLOW, "preset": "fp8-weights", "gpu": "RTX 3060 12GB"}) in fake_core.calls
    assert explained["recognised"] is True
    assert vram_status == 200 and "total_bytes" in vram["snapshot"] and vram["native"]["core"]["available"]


def test_model_paths_outside_model_folders_are_refused(fake_core, tmp_path, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.safetensors").write_bytes(b"")
    outside = tmp_path / "secret.safetensors"
    outside.write_bytes(b"")
    monkeypatch.setattr(routes, "extra_model_roots", [str(models)])

    async def check(client):
        ok = await client.post("/headroom/inspect", json={"paths": [str(models / "a.safetensors")]})
        bad = await client.post("/headroom/inspect", json={"paths": [str(outside)]})
        sneaky = await client.post("/headroom/inspect", json={"paths": [str(models / ".." / "secret.safetensors")]})
        bad_dir = await client.post("/headroom/estimate", json={"workflow": WORKFLOW, "models_dir": str(tmp_path)})
        return ok.status, bad.status, (await bad.json())["error"], sneaky.status, bad_dir.status
    ok, bad, message, sneaky, bad_dir = run_with_client(check)
    assert ok == 200 and bad == 400 and sneaky == 400 and bad_dir == 400
    assert "outside ComfyUI's model folders" in message


def test_settings_round_trip(fake_core):
    async def check(client):
        r = await client.post("/headroom/settings", json={"queue_action": "block", "budget": "RTX 4090 24GB"})
        return await r.json()
    body = run_with_client(check)
    assert body["queue_action"] == "block" and settings.get()["budget"] == "RTX 4090 24GB"


def test_vram_push_about_once_a_second_while_panel_open(fake_core, monkeypatch):
    sent = []
    monkeypatch.setattr(routes, "pusher", routes.vram_push.VramPusher(send=lambda e, d, sid: sent.append((e, sid))))
    settings.update({"refresh_s": 0.25})

    async def check(client):
        await client.post("/headroom/panel", json={"open": True, "client_id": "abc"})
        await asyncio.sleep(0.9)
        await client.post("/headroom/panel", json={"open": False, "client_id": "abc"})
        count_at_close = len(sent)
        await asyncio.sleep(0.6)
        return count_at_close, len(sent)
    at_close, later = run_with_client(check)
    # 0.9 s at one reading per 0.25 s: the first at once, then ~3 more.
    assert 3 <= at_close <= 5, sent
    assert later - at_close <= 1  # at most one reading already in flight when it closed
    assert all(e == "headroom.vram" and sid == "abc" for e, sid in sent)
