"""Headroom's own estimate of one stage, from the core library (headroom_core estimate, JSON in and out; the
request fields are those of `headroom estimate`, native/core/api/api.hpp). No estimator arithmetic here."""
import json

_CATALOG = None


def catalog_names(hc):
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = {m["name"] for m in json.loads(hc.catalog())["models"]}
    return _CATALOG


def estimate(hc, **req):
    """The whole estimate (dict), or {'error': message}."""
    if hc is None:
        return {"error": "the core library headroom_core is not loadable"}
    # The bench runs torch directly with every weight on the card, which is ComfyUI's legacy loader
    # (whole models loaded), not dynamic VRAM, the core's default since issue 20.
    req.setdefault("runtime", "legacy")
    try:
        return json.loads(hc.estimate(json.dumps(req)))
    except Exception as e:  # noqa: BLE001 - the core's InputError arrives as an exception with the message
        return {"error": str(e)}


def stage(est, name):
    for s in est.get("stages", []):
        if s["name"] == name:
            return s
    return None


def weights_in(st):
    """Bytes of the weights the stage keeps resident (every 'weights:*' part) plus its streamed layer."""
    if not st:
        return 0
    b = st.get("breakdown", {})
    return sum(v for k, v in b.items() if k.startswith("weights:")) + b.get("streamed_layer", 0)


def torch_side(st):
    """What PyTorch's allocator should see of the stage: the peak less ComfyUI's reserve and the CUDA context
    (neither is allocated through torch)."""
    if not st:
        return None
    b = st.get("breakdown", {})
    return st["peak_bytes"] - b.get("comfyui_reserve", 0) - b.get("cuda_context", 0)
