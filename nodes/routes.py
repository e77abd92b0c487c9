"""HTTP routes under /headroom/ (the panel's open/close starts and stops the VRAM push, vram_push.py).

Handlers are module-level coroutines registered on ComfyUI's RouteTableDef (ComfyUI also mounts them
under /api/). Bad bodies get 400 with a message naming the field; a missing native module gets 503
with the fix."""
import asyncio
import json
import os

from aiohttp import web

from . import budget, comfy_adapters, native_loader, settings, vram_push, vram_snapshot

MAX_BODY_BYTES = 16 * 1024 * 1024  # a large subgraph workflow is ~100 kB; refuse anything absurd


class BadRequest(ValueError):
    pass


def _error(status, message, **extra):
    return web.json_response({"error": message, **extra}, status=status)


async def _body(request) -> dict:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise BadRequest(f"body: larger than {MAX_BODY_BYTES} bytes")
    try:
        data = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        raise BadRequest("body: expected a JSON object")
    if not isinstance(data, dict):
        raise BadRequest(f"body: expected a JSON object, got {type(data).__name__}")
    return data


def _workflow(body) -> dict:
    workflow = body.get("workflow")
    if not isinstance(workflow, dict) or not workflow:
        raise BadRequest("workflow: expected a ComfyUI workflow object (UI format with 'nodes', or API format)")
    return workflow


def _budget_fields(body) -> dict:
    if "vram_bytes" in body:
        value = body["vram_bytes"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise BadRequest(f"vram_bytes: expected a positive integer, got {value!r}")
        return {"vram_bytes": value}
    if "gpu" in body:
        if not isinstance(body["gpu"], str) or not body["gpu"].strip():
            raise BadRequest("gpu: expected a GPU name such as 'RTX 4090 24GB'")
        return {"gpu": body["gpu"]}
    value = body.get("budget", settings.get()["budget"])
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadRequest(f"budget: expected 'auto', a number of GB or a GPU name, got {value!r}")
    try:
        return budget.resolve(value)
    except ValueError as e:
        raise BadRequest(str(e))


# ---- model folders: paths from a request must lie inside ComfyUI's model folders ----

extra_model_roots = []  # tests and tools without ComfyUI add folders here


def model_roots():
    roots = list(extra_model_roots)
    try:
        import folder_paths
    except ImportError:
        return roots
    roots.append(folder_paths.models_dir)
    for paths, _exts in getattr(folder_paths, "folder_names_and_paths", {}).values():
        roots.extend(paths)
    return roots


def checked_model_path(path) -> str:
    if not isinstance(path, str) or not path:
        raise BadRequest("path: expected a file path string")
    real = os.path.realpath(path)
    for root in model_roots():
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return real
    raise BadRequest(f"path: {path} is outside ComfyUI's model folders; Headroom only reads files there")


async def _core(function, request_obj):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, native_loader.call_json, function, request_obj)


def _guard(handler):
    async def wrapped(request):
        try:
            return await handler(request)
        except BadRequest as e:
            return _error(400, str(e))
        except native_loader.NativeUnavailable as e:
            return _error(503, str(e), fix=native_loader.fix_command())
        except ValueError as e:  # the core's InputError / FileFormatError: the user's input is wrong
            return _error(400, str(e))
        except RuntimeError as e:
            return _error(500, str(e))
    wrapped.__name__ = handler.__name__
    return wrapped


# ---- handlers ----

@_guard
async def get_vram(request):
    return web.json_response({"snapshot": vram_snapshot.snapshot(), "native": native_loader.status(),
                              "settings": settings.get()})


@_guard
async def post_estimate(request):
    body = await _body(request)
    req = comfy_adapters.plan_request(_workflow(body), _budget_fields(body))
    if "models_dir" in body:
        req["models_dir"] = checked_model_path(body["models_dir"])
    return web.json_response(await _core("plan", req))


@_guard
async def get_presets(request):
    catalog = json.loads(native_loader.core().catalog())
    return web.json_response({"presets": catalog.get("presets", [])})


@_guard
async def post_explain(request):
    body = await _body(request)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("text: expected the error message as a non-empty string")
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(None, lambda: json.loads(native_loader.core().explain(text)))
    return web.json_response(result)


@_guard
async def post_apply_preset(request):
    body = await _body(request)
    preset = body.get("preset")
    if not isinstance(preset, str) or not preset:
        raise BadRequest("preset: expected a preset name from GET /headroom/presets")
    req = {"workflow": _workflow(body), "preset": preset, **_budget_fields(body)}
    return web.json_response(await _core("apply_preset", req))


@_guard
async def post_inspect(request):
    body = await _body(request)
    paths = body.get("paths")
    if not isinstance(paths, list) or not paths:
        raise BadRequest("paths: expected a non-empty list of model file paths")
    checked = [checked_model_path(p) for p in paths]
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(None, lambda: json.loads(native_loader.core().inspect(checked)))
    return web.json_response(result)


@_guard
async def post_settings(request):
    body = await _body(request)
    return web.json_response(settings.update(body))


@_guard
async def post_panel(request):
    body = await _body(request)
    is_open = body.get("open")
    if not isinstance(is_open, bool):
        raise BadRequest("open: expected true or false")
    client_id = body.get("client_id")
    if client_id is not None and not isinstance(client_id, str):
        raise BadRequest("client_id: expected a string")
    (pusher.open if is_open else pusher.close)(client_id)
    return web.json_response({"open_clients": len(pusher.clients)})


pusher = vram_push.VramPusher()

ROUTES = [
    ("GET", "/headroom/vram", get_vram),
    ("POST", "/headroom/estimate", post_estimate),
    ("GET", "/headroom/presets", get_presets),
    ("POST", "/headroom/explain", post_explain),
    ("POST", "/headroom/apply-preset", post_apply_preset),
    ("POST", "/headroom/inspect", post_inspect),
    ("POST", "/headroom/settings", post_settings),
    ("POST", "/headroom/panel", post_panel),
]


def register(routes):
    """Adds the handlers to an aiohttp RouteTableDef (ComfyUI's PromptServer.instance.routes)."""
    for method, path, handler in ROUTES:
        routes.route(method, path)(handler)
