"""HeadroomVRAMSnapshot: passthrough that reports the card's memory at this point of the graph."""
from ..comfyui import vram_snapshot


class AnyType(str):
    """ComfyUI type that matches every socket (the graph checks types with !=)."""

    def __ne__(self, other):
        return False


ANY = AnyType("*")


class HeadroomVRAMSnapshot:
    CATEGORY = "Headroom"
    FUNCTION = "snapshot"
    RETURN_TYPES = (ANY, "STRING")
    RETURN_NAMES = ("value", "report")
    OUTPUT_NODE = True
    DESCRIPTION = ("Reports total and free VRAM (ComfyUI's definition), PyTorch allocated and reserved, the "
                   "reserved-but-unallocated share and other processes on the card; passes its input through.")

    @classmethod
    def INPUT_TYPES(cls):
        return {"optional": {"value": (ANY, {"tooltip": "Anything; passed through so the snapshot runs "
                                             "at this point of the graph."})}}

    @classmethod
    def IS_CHANGED(cls, value=None):
        return float("nan")  # a reading is only true now

    def snapshot(self, value=None):
        text = vram_snapshot.format_report(vram_snapshot.snapshot())
        return {"ui": {"text": [text]}, "result": (value, text)}
