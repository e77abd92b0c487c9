"""Adapters to ComfyUI's internals (comfy.*, folder_paths), each imported lazily so that the pack imports
without ComfyUI: the live runtime, the budget, the model folders, making room for a decode, ComfyUI's
own tiled decode."""
