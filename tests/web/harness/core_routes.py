"""The pack's /headroom/plan, /headroom/presets, /headroom/apply-preset and /headroom/suggest-preset answered by the built core
(build/capi, or $HEADROOM_BUILD_DIR/capi) for one fixed card, the rest by `mock`: the panel's figures in
these tests are the core's own. None when the core is not built."""
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from .mock_routes import SNAPSHOT, mock

REPO = Path(__file__).resolve().parents[3]


def _pack_client():
    """The pack's ctypes client (nodes/native/core_capi.py, the one the headroom_core wheel installs too),
    with nodes/native mounted as its own package, as install.py mounts it."""
    native, name = REPO / "nodes" / "native", "headroom_web_harness_native"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, native / "__init__.py",
                                                      submodule_search_locations=[str(native)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return importlib.import_module(name + ".core_capi")


def load_core():
    build = Path(os.environ.get("HEADROOM_BUILD_DIR", "build"))
    capi = _pack_client()
    lib_path = (build if build.is_absolute() else REPO / build) / "capi" / capi.library_name()
    if not lib_path.is_file():
        return None
    client = capi.CapiCore(lib_path)

    def call(function, request):
        return json.loads(client.call_text(function, json.dumps(request)))
    return call


def core_routes(call, vram_bytes, counts, models_dir=None):
    """A `mock` for harness.server.Server: the card is `vram_bytes`; counts[function] += 1 per core call.
    With `models_dir` the core reads the loaders' files from it, as the routes pass ComfyUI's folders."""
    card = {"vram_bytes": vram_bytes, **({"models_dir": str(models_dir)} if models_dir else {})}

    def core(function, request):
        counts[function] = counts.get(function, 0) + 1
        return call(function, request)

    def routes(method, route, body):
        try:
            if route == "/headroom/vram":
                return 200, {"snapshot": {**SNAPSHOT, "total_bytes": vram_bytes}, "native": {}}
            if route == "/headroom/presets":
                catalog = call("catalog", {})
                return 200, {"presets": catalog["presets"], "verdicts": catalog["verdicts"]}
            if route == "/headroom/plan":
                return 200, core("plan", {"workflow": body["workflow"], **card})
            if route == "/headroom/apply-preset":
                return 200, core("apply_preset", {"workflow": body["workflow"], "preset": body["preset"], **card})
            if route == "/headroom/suggest-preset":
                return 200, core("suggest_preset", {"workflow": body["workflow"], **card})
        except ValueError as e:
            return 400, {"error": str(e)}
        return mock(method, route, body)
    return routes
