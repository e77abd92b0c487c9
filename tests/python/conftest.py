"""Shared fixtures: where the native build and the shared reference data are, and the pack itself
imported the way ComfyUI imports a custom-node folder (a package from its __init__.py)."""
import contextlib
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
if not BUILD_DIR.is_absolute():
    BUILD_DIR = REPO / BUILD_DIR
BUILD_PYTHON = BUILD_DIR / "python"
SHARED = REPO.parent / "shared"
PACK_NAME = "headroom_pack"

if BUILD_PYTHON.is_dir() and str(BUILD_PYTHON) not in sys.path:
    sys.path.insert(0, str(BUILD_PYTHON))
# The pack finds the build through the same variable (absolute, so cwd does not matter).
os.environ["HEADROOM_BUILD_DIR"] = str(BUILD_DIR)


def load_pack(name=PACK_NAME):
    """Imports <repo>/__init__.py as package `name`, like ComfyUI's load_custom_node."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "__init__.py",
                                                  submodule_search_locations=[str(REPO)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


load_pack()


def install_module():
    """install.py as a module (it is a script at the pack's top, not part of the package)."""
    spec = importlib.util.spec_from_file_location("headroom_install", REPO / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_core = []


def native_core_or_none():
    """The built C library (build/capi) through the nodes' ctypes wrapper, or None when it is not built."""
    if not _core:
        load_pack()
        from headroom_pack.nodes.native import core_capi
        path = BUILD_DIR / "capi" / core_capi.library_name()
        _core.append(core_capi.CapiCore(path) if path.is_file() else None)
    return _core[0]


def real_core_or_skip():
    """The built core library, or a skip of the calling test when it is not built."""
    core = native_core_or_none()
    if core is None:
        pytest.skip("the core library (build/capi) is not built")
    return core


def run_with_client(check):
    """Starts an aiohttp app with the pack's real routes on 127.0.0.1 (ephemeral port), runs
    `await check(client)`, shuts it down and returns what check returned."""
    import asyncio
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer
    load_pack()
    from headroom_pack.nodes.server import calibration_routes, routes

    async def main():
        table = web.RouteTableDef()
        routes.register(table)
        calibration_routes.register(table)
        app = web.Application()
        app.add_routes(table)
        async with TestClient(TestServer(app, host="127.0.0.1", port=0)) as client:
            return await check(client)
    return asyncio.run(main())


def core_built() -> bool:
    """True when the core library is built; tests of the real core skip only when it is not."""
    return native_core_or_none() is not None


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def build_dir():
    return BUILD_DIR


@pytest.fixture(scope="session")
def shared_dir():
    if not SHARED.is_dir():
        pytest.skip(f"shared reference data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="session")
def real_workflows(shared_dir):
    return shared_dir / "real-workflows"


@pytest.fixture(scope="session")
def oom_examples(shared_dir):
    return json.loads((shared_dir / "facts" / "oom-examples.json").read_text())


@pytest.fixture(scope="session")
def pack():
    return load_pack()


@contextlib.contextmanager
def natives_installed(core=None, torch_ops=None, core_cause=None, torch_cause=None):
    """The pack's native loader answers with these stand-ins (or, with a cause, reports the module as
    unavailable) and the settings start from their defaults; both are reset afterwards."""
    load_pack()
    from headroom_pack.nodes.native import native_loader
    from headroom_pack.nodes.server import settings
    native_loader.reset()
    if core is not None or core_cause is not None:
        native_loader._cache[native_loader.CORE_MODULE] = (core, core_cause)
    if torch_ops is not None or torch_cause is not None:
        native_loader._cache[native_loader.TORCH_MODULE] = (torch_ops, torch_cause)
    settings.reset()
    try:
        yield core
    finally:
        native_loader.reset()
        settings.reset()


@pytest.fixture
def fake_core():
    """A FakeCore (tests/python/fakes.py) as the pack's estimator core."""
    import fakes
    with natives_installed(fakes.FakeCore()) as core:
        yield core


@pytest.fixture
def comfy_standin(monkeypatch):
    """Installs stand-ins of the ComfyUI modules that decide its memory runtime: comfy.cli_args (the flags),
    comfy.model_management, comfyui_version, and comfy.memory_management with aimdo_enabled (set by
    main.py once comfy-aimdo started; aimdo=None installs none, as in ComfyUI before 0.15). Returns
    install(version, aimdo, **cli_args)."""
    import types

    def install(version, aimdo, **cli_args):
        args = dict(reserve_vram=None, vram_headroom=0.0, disable_pinned_memory=False, disable_dynamic_vram=False,
                    highvram=False, gpu_only=False, novram=False, cpu=False)
        args.update(cli_args)
        cli = types.ModuleType("comfy.cli_args")
        cli.args = types.SimpleNamespace(**args)
        monkeypatch.setitem(sys.modules, "comfy.cli_args", cli)
        monkeypatch.setitem(sys.modules, "comfy.model_management", types.ModuleType("comfy.model_management"))
        ver = types.ModuleType("comfyui_version")
        ver.__version__ = version
        monkeypatch.setitem(sys.modules, "comfyui_version", ver)
        if aimdo is None:
            monkeypatch.delitem(sys.modules, "comfy.memory_management", raising=False)
        else:
            mem = types.ModuleType("comfy.memory_management")
            mem.aimdo_enabled = aimdo
            monkeypatch.setitem(sys.modules, "comfy.memory_management", mem)
    return install


@pytest.fixture(autouse=True)
def _queue_time_estimates_done():
    """The queue-time estimates run on a worker thread (nodes/server/prompt_handler.py); one left running would
    land in the next test, with that test's core and settings."""
    yield
    handler = sys.modules.get(f"{PACK_NAME}.nodes.prompt_handler")
    if handler is not None:
        assert handler.wait_idle(30), "a queue-time estimate was still running 30 s after its test"
