"""The calibration's routes: GET /headroom/calibration, POST /headroom/calibration/reset and GET
/headroom/runs/export (the measurements for a bug report). Errors go through routes._guard like every
other /headroom/ route."""
import asyncio

from aiohttp import web

from . import calibration, runs_export
from . import routes
from .routes import _guard


async def _off_loop(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


@_guard
async def get_calibration(request):
    return web.json_response(await _off_loop(calibration.status))


@_guard
async def post_calibration_reset(request):
    await _off_loop(calibration.reset)
    return web.json_response(await _off_loop(calibration.status))


def _version():
    from ..native import native_loader
    try:
        return getattr(native_loader.core(), "version", None)
    except Exception:  # the export works without the core: it only names its version
        return None


@_guard
async def get_runs_export(request):
    runs = await _off_loop(calibration.runs_source) or []
    body = runs_export.export(runs, await _off_loop(calibration.load), await _off_loop(_version))
    return web.json_response(body, headers={"Content-Disposition": 'attachment; filename="headroom-runs.json"'})


ROUTES = [
    ("GET", "/headroom/calibration", get_calibration),
    ("POST", "/headroom/calibration/reset", post_calibration_reset),
    ("GET", "/headroom/runs/export", get_runs_export),
]


def register(table):
    routes.register(table, ROUTES)
