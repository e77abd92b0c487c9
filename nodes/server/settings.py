"""Server-side copy of the panel's settings, so the queue-time handler can act on them.

The frontend keeps the user's settings; the panel posts them here on load and on every change.
Defaults apply until then (and when no browser is open, e.g. API clients)."""
import threading

from ..comfyui import budget as budget_mod

QUEUE_ACTIONS = ("pass", "warn", "block", "auto-fix")
# calibration: off until the user turns it on (docs/calibration.md); estimates then use corrections
# learned from this card's own recorded runs.
DEFAULTS = {"queue_action": "warn", "budget": "auto", "refresh_s": 1.0, "calibration": False}

_lock = threading.Lock()
_values = dict(DEFAULTS)


def get() -> dict:
    with _lock:
        return dict(_values)


def update(changes: dict) -> dict:
    """Validates and stores; raises ValueError naming the field for bad values."""
    if not isinstance(changes, dict):
        raise ValueError("settings: expected a JSON object")
    clean = {}
    for key, value in changes.items():
        if key == "queue_action":
            if value not in QUEUE_ACTIONS:
                raise ValueError(f"queue_action: expected one of {', '.join(QUEUE_ACTIONS)}, got {budget_mod._short(value)}")
            clean[key] = value
        elif key == "budget":
            clean[key] = budget_mod.validate(value)
        elif key == "refresh_s":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.2 <= value <= 60:
                raise ValueError(f"refresh_s: expected seconds between 0.2 and 60, got {budget_mod._short(value)}")
            clean[key] = float(value)
        elif key == "calibration":
            if not isinstance(value, bool):
                raise ValueError(f"calibration: expected true or false, got {budget_mod._short(value)}")
            clean[key] = value
        else:
            raise ValueError(f"{str(key)[:40]}: unknown setting (known: {', '.join(DEFAULTS)})")
    with _lock:
        _values.update(clean)
        return dict(_values)


def reset():
    with _lock:
        _values.clear()
        _values.update(DEFAULTS)
