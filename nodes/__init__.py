"""Headroom's ComfyUI nodes, in packages by role (docs/architecture.md): graph/ the node classes, server/
the routes and the queue-time check, comfyui/ the adapters to ComfyUI's internals, native/ the loading of
the core and the decoders, recorder/ the run recorder, report/ the answer in words. Importing this package
loads no torch, ComfyUI or native module."""
from .graph.explain import HeadroomExplainOOM
from .graph.loader import HeadroomLoadDiffusionModel
from .graph.preflight import HeadroomPreflight
from .graph.snapshot_node import HeadroomVRAMSnapshot
from .graph.vae_decode import HeadroomVAEDecode
from .server.queue_gate import HeadroomQueueGate  # the queue-time block, never added by users

NODE_CLASS_MAPPINGS = {
    "HeadroomPreflight": HeadroomPreflight,
    "HeadroomVAEDecode": HeadroomVAEDecode,
    "HeadroomLoadDiffusionModel": HeadroomLoadDiffusionModel,
    "HeadroomExplainOOM": HeadroomExplainOOM,
    "HeadroomVRAMSnapshot": HeadroomVRAMSnapshot,
    "HeadroomQueueGate": HeadroomQueueGate,
}

NODE_DISPLAY_NAME_MAPPINGS = {
    "HeadroomPreflight": "Preflight (Headroom)",
    "HeadroomVAEDecode": "VAE Decode (Headroom)",
    "HeadroomLoadDiffusionModel": "Load Diffusion Model (Headroom)",
    "HeadroomExplainOOM": "Explain OOM (Headroom)",
    "HeadroomVRAMSnapshot": "VRAM Snapshot (Headroom)",
    "HeadroomQueueGate": "Queue Gate (Headroom, internal)",
}


def register_with_server():
    """Adds the routes and the queue-time handler to ComfyUI's server when one is running.
    Returns False (and changes nothing) outside ComfyUI."""
    try:
        from server import PromptServer
    except Exception:
        return False
    instance = getattr(PromptServer, "instance", None)
    if instance is None or not hasattr(instance, "routes"):
        return False
    from .server import calibration_routes, prompt_handler, routes
    routes.register(instance.routes)
    calibration_routes.register(instance.routes)
    instance.add_on_prompt_handler(prompt_handler.on_prompt)
    log_native_status()
    start_recorder(instance)
    return True


def start_recorder(instance):
    """The run recorder (nodes/recorder/), on unless HEADROOM_RECORDER=0; a failure only loses the records."""
    import logging
    import os
    if os.environ.get("HEADROOM_RECORDER", "1").strip() == "0":
        return
    try:
        from . import recorder
        recorder.install(instance)
    except Exception as e:
        logging.getLogger("headroom").warning("Headroom: run recorder not started: %s", e)


def log_native_status():
    """One line per native part in ComfyUI's start-up log: loaded (from where), or why not and the fix."""
    import logging
    from .native import native_loader
    log = logging.getLogger("headroom")
    try:
        for level, text in native_loader.startup_lines():
            log.log(level, text)
    except Exception as e:  # the log line must never keep the pack from loading
        log.warning("Headroom: could not check the native modules: %s", e)
