"""Headroom for ComfyUI: predicts peak VRAM before a run, fixes over-budget workflows, decodes in
tiles without seams and explains out-of-memory errors.

Importing the pack never fails because of the native build: the nodes load, and report the cause
and the fix command when they are used (see nodes/native/native_loader.py)."""
import logging

from .nodes import NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS, register_with_server

WEB_DIRECTORY = "./web"

try:
    register_with_server()
except Exception as e:  # a routing clash must not take the nodes down with it
    logging.getLogger("headroom").warning("Headroom: routes not registered: %s", e)

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS", "WEB_DIRECTORY"]
