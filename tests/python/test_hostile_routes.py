"""Hostile bodies against the real route handlers (issue 13, items 9 and 10), on an aiohttp app set up
like ComfyUI's (client_max_size = its 100 MB upload limit). Every case has a time limit (20 s) and a
memory limit (the Python heap may grow by at most 48 MiB while it runs, measured with tracemalloc),
and must end in a JSON 4xx naming the body or the field, never a 500."""
import asyncio
import json
import tracemalloc

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

import fakes
from conftest import load_pack

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, routes, settings  # noqa: E402

COMFY_CLIENT_MAX_SIZE = 100 * 1024 * 1024  # ComfyUI server.py: --max-upload-size, 100 MB by default
TIME_LIMIT_S = 20
HEAP_LIMIT = 48 * 1024 * 1024
WORKFLOW = {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors",
                                                        "weight_dtype": "default"}}}


def run_limited(check):
    """Runs `await check(client)` against the real routes under the time and heap limits; returns
    what check returned."""
    async def main():
        table = web.RouteTableDef()
        routes.register(table)
        app = web.Application(client_max_size=COMFY_CLIENT_MAX_SIZE)
        app.add_routes(table)
        async with TestClient(TestServer(app, host="127.0.0.1", port=0)) as client:
            return await asyncio.wait_for(check(client), TIME_LIMIT_S)

    tracemalloc.start()
    try:
        result = asyncio.run(main())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < HEAP_LIMIT, f"the server's heap grew to {peak / 2**20:.0f} MiB"
    return result


async def post_raw(client, path, data, **headers):
    r = await client.post(path, data=data, headers={"Content-Type": "application/json", **headers})
    text = await r.text()
    return r.status, (json.loads(text) if text.startswith("{") else text)


def chunked_json_body(total_bytes, chunk=1 << 20):
    """A valid JSON object of about `total_bytes`, sent chunked (no Content-Length); the same chunk
    object is sent again and again so the client does not count against the heap limit."""
    head = b'{"workflow": {"1": {"class_type": "X", "inputs": {"t": "'
    tail = b'"}}}}'
    filler = b"a" * chunk

    async def gen():
        yield head
        for _ in range(total_bytes // chunk):
            yield filler
        yield tail
    return gen()


def test_chunked_body_past_the_limit_is_refused_while_it_arrives(fake_core):
    sent = {"estimate_calls": 0}

    async def check(client):
        try:
            r = await client.post("/headroom/estimate", data=chunked_json_body(85 * 1024 * 1024),
                                  headers={"Content-Type": "application/json"})
            return r.status, await r.json()
        except Exception as e:  # the server may close the connection before the client finished sending
            return "closed", str(e)
    status, body = run_limited(check)
    sent["estimate_calls"] = sum(1 for c in fake_core.calls if c[0] == "plan")
    assert sent["estimate_calls"] == 0
    if status != "closed":
        assert status == 413 and body["error"].startswith("body: larger than"), body


def test_chunked_body_under_the_limit_is_accepted(fake_core):
    async def check(client):
        r = await client.post("/headroom/estimate", data=chunked_json_body(2 * 1024 * 1024),
                              headers={"Content-Type": "application/json"})
        return r.status, await r.json()
    status, body = run_limited(check)
    assert status == 200 and body["peak_bytes"] == fake_core.peak


def test_declared_length_past_the_limit_is_refused(fake_core):
    async def check(client):
        return await post_raw(client, "/headroom/estimate", b"{" + b" " * (routes.MAX_BODY_BYTES + 10) + b"}")
    status, body = run_limited(check)
    assert status == 413 and body["error"].startswith("body: larger than")


NON_FINITE = [
    b'{"workflow": {"1": {}}, "budget": Infinity}',
    b'{"workflow": {"1": {}}, "budget": -Infinity}',
    b'{"workflow": {"1": {}}, "budget": NaN}',
    b'{"workflow": {"1": {}}, "budget": 1e308}',
    b'{"workflow": {"1": {}}, "budget": 1e400}',
    b'{"workflow": {"1": {}}, "vram_bytes": ' + b"9" * 400 + b"}",
    b'{"workflow": {"1": {}}, "vram_bytes": 1e400}',
    b'{"workflow": {"1": {}}, "vram_bytes": 18446744073709551616}',
]


@pytest.mark.parametrize("payload", NON_FINITE, ids=lambda p: p[24:60].decode())
def test_non_finite_and_huge_numbers_get_400(fake_core, payload):
    async def check(client):
        return await post_raw(client, "/headroom/estimate", payload)
    status, body = run_limited(check)
    assert status == 400, body
    assert body["error"].split(":")[0] in ("body", "budget", "vram_bytes"), body


@pytest.mark.parametrize("budget", ["9" * 400, "1e308", 1e308, "-3", "inf", "nan", "x" * 5000, "RTX\n4090"])
def test_budget_strings_out_of_range_get_400_on_every_route(fake_core, budget):
    async def check(client):
        results = []
        for path, extra in (("/headroom/estimate", {"workflow": WORKFLOW}),
                            ("/headroom/apply-preset", {"workflow": WORKFLOW, "preset": "fp8-weights"}),
                            ("/headroom/settings", {})):
            results.append(await post_raw(client, path, json.dumps({**extra, "budget": budget}).encode()))
        return results
    for status, body in run_limited(check):
        assert status == 400 and body["error"].startswith("budget"), body
    assert settings.get()["budget"] == "auto"


def test_bad_budget_cannot_be_stored_so_prompts_keep_working(fake_core):
    """Item 10: a 400-digit budget was stored, after which on_prompt raised for every prompt."""
    with pytest.raises(ValueError, match="^budget"):
        settings.update({"budget": "9" * 400})
    sent = []
    prompt_handler.send = lambda event, data, sid: sent.append(data)
    try:
        out = prompt_handler.on_prompt({"prompt": WORKFLOW, "client_id": "c"})
        assert prompt_handler.wait_idle()  # warn's toast comes from the worker thread
    finally:
        prompt_handler.send = prompt_handler._send
    assert out["prompt"] == WORKFLOW and "error" not in sent[-1]


@pytest.mark.parametrize("depth", [101, 5000, 200000])
@pytest.mark.parametrize("kind", ["list", "object"])
def test_deeply_nested_bodies_get_400(fake_core, depth, kind):
    inner = (b"[" * depth + b"]" * depth) if kind == "list" else (b'{"a":' * depth + b"1" + b"}" * depth)
    payload = b'{"workflow": {"1": {"class_type": "X", "inputs": {"v": ' + inner + b"}}}}"

    async def check(client):
        return await post_raw(client, "/headroom/estimate", payload)
    status, body = run_limited(check)
    assert status == 400 and body["error"].startswith("body: nested deeper"), body
    assert not any(c[0] == "plan" for c in fake_core.calls)


def test_nesting_a_real_workflow_uses_is_accepted(fake_core):
    inner = b"[" * 60 + b"]" * 60
    payload = b'{"workflow": {"1": {"class_type": "X", "inputs": {"v": ' + inner + b"}}}}"

    async def check(client):
        return await post_raw(client, "/headroom/estimate", payload)
    status, _ = run_limited(check)
    assert status == 200


@pytest.mark.parametrize("path,payload,field", [
    ("/headroom/inspect", {"paths": ["a\0b"]}, "path"),
    ("/headroom/inspect", {"paths": ["x"] * 5000}, "paths"),
    ("/headroom/settings", {"x" * 100000: 1}, "x"),
    ("/headroom/settings", {"refresh_s": 1e308}, "refresh_s"),
    ("/headroom/panel", {"open": True, "client_id": 5}, "client_id"),
])
def test_other_hostile_fields_get_400(fake_core, path, payload, field):
    async def check(client):
        return await post_raw(client, path, json.dumps(payload).encode())
    status, body = run_limited(check)
    assert status == 400 and body["error"].startswith(field) and len(body["error"]) < 400, body


@pytest.mark.parametrize("unit", [b"{},", b"[],"])
def test_many_small_containers_within_the_size_limit_get_400(fake_core, unit):
    """6 MB of "[{},{},...]" is 2 million Python dicts (~130 MB) if parsed."""
    payload = b'{"workflow": {"1": {"class_type": "X", "inputs": {"v": [' + unit * (2 * 1024 * 1024) + b'0]}}}}'

    async def check(client):
        return await post_raw(client, "/headroom/estimate", payload)
    status, body = run_limited(check)
    assert status == 400 and body["error"].startswith("body: more than"), body


@pytest.mark.parametrize("real,base,inside", [
    ("C:\\Models\\flux\\x.safetensors", "c:\\models", True),     # Windows ignores case
    ("C:\\models", "C:\\Models", True),
    ("C:\\ModelsX\\x.safetensors", "C:\\Models", False),         # a sibling with the same prefix
    ("D:\\Models\\x.safetensors", "C:\\Models", False),          # another drive
    ("C:\\Models\\..\\secret.txt", "C:\\Models", False),
])
def test_model_path_confinement_on_windows_ignores_case_but_not_prefixes(real, base, inside):
    import ntpath
    assert routes.path_inside(ntpath.normpath(real), base, pathmod=ntpath) is inside


def test_model_path_confinement_on_posix_keeps_case():
    import posixpath
    assert routes.path_inside("/models/flux/x.safetensors", "/models", pathmod=posixpath)
    assert not routes.path_inside("/Models/x.safetensors", "/models", pathmod=posixpath)
    assert not routes.path_inside("/models2/x.safetensors", "/models", pathmod=posixpath)


# ---- issue 27, item 3: the panel's client set is bounded ----

def test_panel_client_id_longer_than_the_limit_gets_400_naming_it(fake_core, monkeypatch):
    monkeypatch.setattr(routes, "pusher", routes.vram_push.VramPusher(send=lambda e, d, sid: None))

    async def check(client):
        long = await post_raw(client, "/headroom/panel", json.dumps({"open": True, "client_id": "x" * 257}).encode())
        ok = await post_raw(client, "/headroom/panel", json.dumps({"open": True, "client_id": "x" * 256}).encode())
        routes.pusher.task.cancel()
        return long, ok
    (status, body), (ok_status, ok_body) = run_limited(check)
    assert status == 400 and body["error"] == "client_id: expected at most 256 characters, got 257", body
    assert ok_status == 200 and ok_body["open_clients"] == 1


def test_panel_body_of_megabytes_is_refused_and_nothing_is_kept(fake_core, monkeypatch):
    """40 opens with 15 MB ids held 615 MB for good."""
    monkeypatch.setattr(routes, "pusher", routes.vram_push.VramPusher(send=lambda e, d, sid: None))
    payload = b'{"open": true, "client_id": "' + b"x" * (15 * 1024 * 1024) + b'"}'

    async def check(client):
        return [await post_raw(client, "/headroom/panel", payload) for _ in range(3)]
    for status, body in run_limited(check):
        assert status == 413 and body["error"] == f"body: larger than {routes.PANEL_BODY_BYTES} bytes", body
    assert len(routes.pusher.clients) == 0


def test_many_panel_opens_keep_a_bounded_client_set(fake_core, monkeypatch):
    """60 s of opens left 524k ids, and every refresh tick sent to each of them."""
    sent = []
    monkeypatch.setattr(routes, "pusher", routes.vram_push.VramPusher(send=lambda e, d, sid: sent.append(sid)))

    async def check(client):
        answers = []
        for i in range(300):
            r = await client.post("/headroom/panel", json={"open": True, "client_id": f"tab{i}"})
            answers.append((await r.json())["open_clients"])
        routes.pusher.task.cancel()
        return answers
    answers = run_limited(check)
    assert max(answers) == answers[-1] == routes.vram_push.MAX_CLIENTS
    assert list(routes.pusher.clients) == [f"tab{i}" for i in range(236, 300)]


def test_settings_body_past_its_own_limit_is_refused(fake_core):
    """A settings body is a few fields; it no longer may be the workflow routes' 16 MB."""
    payload = json.dumps({"budget": "x" * (routes.SETTINGS_BODY_BYTES + 10)}).encode()

    async def check(client):
        return await post_raw(client, "/headroom/settings", payload)
    status, body = run_limited(check)
    assert status == 413 and body["error"] == f"body: larger than {routes.SETTINGS_BODY_BYTES} bytes", body
    assert settings.get()["budget"] == "auto"
