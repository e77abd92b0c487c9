"""HTTP routes under /headroom/ (the panel's open/close starts and stops the VRAM push, vram_push.py).

Handlers are module-level coroutines registered on ComfyUI's RouteTableDef (ComfyUI also mounts them
under /api/). Bad bodies get 400 with a message naming the field; a missing native module gets 503
with the fix."""
import asyncio
import json
import logging
import math
import os

from aiohttp import web

from ..comfyui import budget, comfy_adapters, vram_snapshot
from ..graph import explain
from ..native import native_loader
from . import settings, vram_push
from .. import recorder as run_recorder

MAX_BODY_BYTES = 16 * 1024 * 1024  # a large subgraph workflow is ~100 kB; refuse anything absurd
# Bodies with no workflow in them: {"open": true, "client_id": "<32 hex>"} and a few settings.
PANEL_BODY_BYTES = 16 * 1024
SETTINGS_BODY_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 100  # UI-format workflows with subgraphs nest about 10 deep; widget values a few more
MAX_JSON_INT = 2 ** 64  # byte counts fit in 64 bits; the core reads integers as 64-bit
# A 500-node workflow has ~10k objects and arrays. Each costs ~60 bytes of Python per 2-3 bytes of JSON,
# so 16 MB of "[{},{},...]" would become ~400 MB in the server: count before parsing.
MAX_JSON_CONTAINERS = 250_000
log = logging.getLogger("headroom")


class BadRequest(ValueError):
    pass


class BodyTooLarge(BadRequest):
    pass


def _error(status, message, **extra):
    return web.json_response({"error": message, **extra}, status=status)


async def read_limited(request, limit=MAX_BODY_BYTES) -> bytes:
    """The body, read as it arrives and refused as soon as it passes `limit` bytes, whatever the headers
    say: a chunked body has no Content-Length, and aiohttp's own cap is ComfyUI's upload size (100 MB)."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge(f"body: larger than {limit} bytes")
    chunks, size = [], 0
    while True:
        chunk = await request.content.readany()
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body: larger than {limit} bytes")
        chunks.append(chunk)


def _reject_constant(name):
    raise BadRequest(f"body: {name} is not a JSON number")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(f"body: the number {text[:40]} is out of range")
    return value


def _bounded_int(text):
    if len(text.lstrip("-")) > 20:  # before int(): Python refuses > 4300 digits only after work
        raise BadRequest(f"body: the integer {text[:24]}... ({len(text)} digits) is out of range")
    value = int(text)
    if abs(value) >= MAX_JSON_INT:
        raise BadRequest(f"body: the integer {text} is out of range")
    return value


def json_depth_at_most(value, limit) -> bool:
    """True when `value` nests no deeper than `limit` containers (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return True


def parse_json_object(data: bytes) -> dict:
    """Strict JSON: no NaN/Infinity, no number that does not fit a double or 64 bits, at most
    MAX_JSON_DEPTH levels and MAX_JSON_CONTAINERS objects and arrays; always a dict, else BadRequest
    naming the body."""
    # An upper bound (brackets inside strings count too), computed in C before any object exists.
    if data.count(b"{") + data.count(b"[") > MAX_JSON_CONTAINERS:
        raise BadRequest(f"body: more than {MAX_JSON_CONTAINERS} JSON objects and arrays")
    try:
        value = json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float,
                           parse_int=_bounded_int)
    except BadRequest:
        raise
    except RecursionError:
        raise BadRequest(f"body: nested deeper than {MAX_JSON_DEPTH} levels")
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        raise BadRequest("body: expected a JSON object")
    if not isinstance(value, dict):
        raise BadRequest(f"body: expected a JSON object, got {type(value).__name__}")
    if not json_depth_at_most(value, MAX_JSON_DEPTH):
        raise BadRequest(f"body: nested deeper than {MAX_JSON_DEPTH} levels")
    return value


async def _body(request, limit=MAX_BODY_BYTES) -> dict:
    return parse_json_object(await read_limited(request, limit))


def _workflow(body) -> dict:
    workflow = body.get("workflow")
    if not isinstance(workflow, dict) or not workflow:
        raise BadRequest("workflow: expected a ComfyUI workflow object (UI format with 'nodes', or API format)")
    return workflow


def _budget_fields(body) -> dict:
    if "vram_bytes" in body:
        value = body["vram_bytes"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= budget.MAX_BUDGET_BYTES:
            raise BadRequest(f"vram_bytes: expected a positive integer up to {budget.MAX_BUDGET_BYTES}, "
                             f"got {value!r}")
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


def path_inside(real, base, pathmod=os.path) -> bool:
    """`real` is `base` or below it. Compared after normcase, so on Windows "C:\\Models" holds
    "c:\\models\\x" (its file system ignores case) while "C:\\ModelsX" never counts as inside "C:\\Models"."""
    real, base = pathmod.normcase(real), pathmod.normcase(base)
    try:
        return pathmod.commonpath([real, base]) == base
    except ValueError:  # different drives, or one relative
        return False


def checked_model_path(path) -> str:
    if not isinstance(path, str) or not path or "\0" in path or len(path) > 4096:
        raise BadRequest("path: expected a file path string")
    real = os.path.realpath(path)
    for root in model_roots():
        if path_inside(real, os.path.realpath(root)):
            return real
    raise BadRequest(f"path: {path} is outside ComfyUI's model folders; Headroom only reads files there")


async def _core(function, request_obj):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, native_loader.call_json, function, request_obj)


def _guard(handler):
    async def wrapped(request):
        try:
            return await handler(request)
        except BodyTooLarge as e:
            return _error(413, str(e))
        except BadRequest as e:
            return _error(400, str(e))
        except native_loader.NativeUnavailable as e:
            return _error(503, str(e), fix=native_loader.fix_command())
        except ValueError as e:  # the core's InputError / FileFormatError: the user's input is wrong
            return _error(400, str(e))
        except RuntimeError as e:
            return _error(500, str(e))
        except web.HTTPException:
            raise
        except Exception as e:  # a bug of ours: say so in JSON rather than aiohttp's HTML page
            log.exception("Headroom: %s failed", handler.__name__)
            return _error(500, f"internal error in {handler.__name__}: {type(e).__name__}: {e}")
    wrapped.__name__ = handler.__name__
    return wrapped


# ---- handlers ----

@_guard
async def get_vram(request):
    return web.json_response({"snapshot": vram_snapshot.snapshot(), "native": native_loader.status(),
                              "settings": settings.get()})


@_guard
async def post_plan(request):
    """The core's plan of the workflow: the estimate per stage, the verdict and the ordered changes."""
    body = await _body(request)
    return web.json_response(await _core("plan", _plan_request(body, _budget_fields(body))))


def _plan_request(body, fields) -> dict:
    """The core request for the body's workflow on `fields`' card, with the live loader and ComfyUI's model
    folders: what the plan reads the files from, so a preset's figures rest on the same files."""
    req = comfy_adapters.plan_request(_workflow(body), fields, body.get("runtime"))
    if "models_dir" in body:
        req["models_dir"] = checked_model_path(body["models_dir"])
    return req


@_guard
async def get_presets(request):
    catalog = native_loader.catalog()
    # The verdicts ride along so the panel reads their flags from the catalog, not from their spelling.
    return web.json_response({"presets": catalog.get("presets", []), "verdicts": catalog.get("verdicts", [])})


@_guard
async def post_explain(request):
    body = await _body(request)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("text: expected the error message as a non-empty string")
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(None, explain.explain_text, text)
    return web.json_response(result)


@_guard
async def post_apply_preset(request):
    body = await _body(request)
    preset = body.get("preset")
    if not isinstance(preset, str) or not preset:
        raise BadRequest("preset: expected a preset name from GET /headroom/presets")
    fields = _budget_fields(body)
    if not fields and _preset_needs_card(preset):
        raise BadRequest(NO_CARD)
    # One core call: the answer's before/after carry the verdict and speed on the user's card, and its
    # `plan` is the rewritten workflow's plan (what the panel shows once the preset is applied). The model
    # folders ride along as for the estimate: a broken file withholds the preset's verdict too.
    result = await _core("apply_preset", {**_plan_request(body, fields), "preset": preset})
    return web.json_response(result)


@_guard
async def post_suggest_preset(request):
    """The preset the OOM toast offers (api::suggest_preset): every preset applied and ranked by the core
    on the card of the failure (vram_bytes from the message, else the budget). Without a card the preset
    that needs one is left out by the core, saying so."""
    body = await _body(request)
    return web.json_response(await _core("suggest_preset", _plan_request(body, _budget_fields(body))))


NO_CARD = ("budget: there is no GPU here to fit (no CUDA device) and the budget is auto; set Headroom's budget "
           "to a number of GB or a GPU name such as 'RTX 4090 24GB'")


def _preset_needs_card(name) -> bool:
    """True for a preset that fits "the card of the request" (presets.json target "request")."""
    try:
        presets = native_loader.catalog().get("presets", [])
    except (ValueError, TypeError):
        return False
    return any(p.get("name") == name and p.get("target") == "request" for p in presets if isinstance(p, dict))


@_guard
async def post_inspect(request):
    body = await _body(request)
    paths = body.get("paths")
    if not isinstance(paths, list) or not paths or len(paths) > 1000:
        raise BadRequest("paths: expected a non-empty list of up to 1000 model file paths")
    checked = [checked_model_path(p) for p in paths]
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(None, lambda: json.loads(native_loader.core().inspect(checked)))
    return web.json_response(result)


@_guard
async def post_settings(request):
    body = await _body(request, SETTINGS_BODY_BYTES)
    return web.json_response(settings.update(body))


@_guard
async def post_panel(request):
    body = await _body(request, PANEL_BODY_BYTES)
    is_open = body.get("open")
    if not isinstance(is_open, bool):
        raise BadRequest("open: expected true or false")
    try:
        client_id = vram_push.check_client_id(body.get("client_id"))
    except ValueError as e:
        raise BadRequest(str(e))
    (pusher.open if is_open else pusher.close)(client_id)
    return web.json_response({"open_clients": len(pusher.clients)})


@_guard
async def get_runs(request):
    """The recorded runs, newest first, as the core reads the history (api::runs)."""
    text = request.query.get("limit", "20")
    try:
        limit = int(text)
    except ValueError:
        raise BadRequest(f"limit: expected a whole number from 1 to 200, got {text[:40]!r}")
    rec = run_recorder.recorder()
    if rec is not None:
        loop = asyncio.get_running_loop()
        return web.json_response(await loop.run_in_executor(None, rec.history, limit))
    from ..recorder import history_store
    path = history_store.default_path()
    if path is None:
        return _error(503, "the run recorder is not running and ComfyUI's user directory is unknown")
    return web.json_response(await _core("runs", {"history": path, "limit": limit}))


@_guard
async def get_unfinished_run(request):
    """The run the previous process left unfinished, with the core's explanation, until it is seen."""
    from . import unfinished_notice
    return web.json_response(await asyncio.get_running_loop().run_in_executor(None, unfinished_notice.notice))


@_guard
async def post_unfinished_run_seen(request):
    from . import unfinished_notice
    return web.json_response({"forgotten": unfinished_notice.seen()})


pusher = vram_push.VramPusher()

ROUTES = [
    ("GET", "/headroom/vram", get_vram),
    ("POST", "/headroom/plan", post_plan),
    # The old name of /headroom/plan (it always ran a plan), kept for users' scripts; the web calls /plan.
    ("POST", "/headroom/estimate", post_plan),
    ("GET", "/headroom/presets", get_presets),
    ("POST", "/headroom/explain", post_explain),
    ("POST", "/headroom/apply-preset", post_apply_preset),
    ("POST", "/headroom/suggest-preset", post_suggest_preset),
    ("POST", "/headroom/inspect", post_inspect),
    ("POST", "/headroom/settings", post_settings),
    ("POST", "/headroom/panel", post_panel),
    ("GET", "/headroom/runs", get_runs),
    ("GET", "/headroom/runs/unfinished", get_unfinished_run),
    ("POST", "/headroom/runs/unfinished/seen", post_unfinished_run_seen),
]


def register(table, handlers=None):
    """Adds the handlers (these routes, or another module's list of the same form) to an aiohttp
    RouteTableDef (ComfyUI's PromptServer.instance.routes)."""
    for method, path, handler in ROUTES if handlers is None else handlers:
        table.route(method, path)(handler)
