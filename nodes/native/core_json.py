"""Request text for the core from what ComfyUI hands the nodes.

A prompt is not always JSON: Python's json reads NaN and Infinity into it, and when ComfyUI runs a prompt
it writes each node's IS_CHANGED answer into node["is_changed"] (execution.py IsChangedCache), which is
NaN for every "always run again" node, and may be any object a custom node returns. json.dumps writes NaN
as a bare word the core's strict reader refuses, so one such node would cost the whole estimate. Here a
value JSON cannot carry becomes a string: where the core does not read it (is_changed, a custom node's
input) nothing changes, and where it does, the core names the field and what it expected."""
import json
import math

# Deeper than any workflow (about 10 levels with subgraphs); past it the core refuses the request by name.
MAX_DEPTH = 200
NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def dumps(value) -> str:
    """JSON text of `value`; never raises for what a prompt may hold."""
    try:
        return json.dumps(value, allow_nan=False)  # the usual case, in C
    except (ValueError, TypeError, RecursionError):
        return json.dumps(_clean(value, 0, set()), allow_nan=False)


def _float_text(value: float) -> str:
    return "NaN" if math.isnan(value) else NON_FINITE[value]


def _clean(value, depth, path):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _float_text(value)
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_DEPTH or id(value) in path:
            return f"<{type(value).__name__} nested too deep or in itself>"
        path.add(id(value))
        try:
            if isinstance(value, dict):
                return {_key(k): _clean(v, depth + 1, path) for k, v in value.items()}
            return [_clean(v, depth + 1, path) for v in value]
        finally:
            path.discard(id(value))
    # A tensor, bytes, an object of a custom node: its type is all the core could ever use of it.
    return f"<{type(value).__name__}>"


def _key(key) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float) and not math.isfinite(key):
        return _float_text(key)
    return json.dumps(key) if key is None or isinstance(key, (bool, int, float)) else f"<{type(key).__name__}>"
