"""Applies the planner's cheapest fix to an API-format prompt (only when the user chose auto-fix).

The planner names its changes; Headroom applies those it can make itself: widget edits
({node_id, widget, to}) and named presets (through the core's apply_preset). Anything else is left
for the user and reported."""
import copy

from ..comfyui import comfy_adapters
from ..native import native_loader


def _is_link(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)


def _edits_of(change: dict):
    if "edits" in change and isinstance(change["edits"], list):
        return change["edits"]
    if "widget" in change and "node_id" in change and "to" in change:
        return [change]
    return []


def apply_edits(prompt: dict, edits) -> list:
    """Sets prompt[node_id].inputs[widget] = to where that input is a widget value; returns the applied edits."""
    applied = []
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        node = prompt.get(str(edit.get("node_id")))
        if not isinstance(node, dict):
            continue
        inputs = node.setdefault("inputs", {})
        name = edit.get("widget")
        if not isinstance(inputs, dict) or not isinstance(name, str):
            continue  # not a widget Headroom can set: the planner's edit or the prompt is malformed
        if name in inputs and _is_link(inputs[name]):
            continue  # fed by another node: changing it here would cut the link
        applied.append({"node_id": str(edit.get("node_id")), "widget": name,
                        "from": inputs.get(name), "to": edit.get("to")})
        inputs[name] = edit.get("to")
    return applied


PRESET_PREFIX = "preset "  # how apply_cheapest_fix describes a fix made by a named preset


def preset_named(description):
    """The preset an auto-fix applied (its description "preset <name>"), or None: the browser applies
    the same preset to the graph on screen, so what is shown is what ran."""
    if isinstance(description, str) and description.startswith(PRESET_PREFIX):
        return description[len(PRESET_PREFIX):]
    return None


FALLBACK_FIT_PRESET = "fit this card"  # presets.json: the preset whose target is the request's card


def fit_preset_name() -> str:
    """The catalog's preset that applies the cheapest widget changes fitting the requested card."""
    try:
        catalog = native_loader.catalog()
    except (native_loader.NativeUnavailable, ValueError, RuntimeError):
        return FALLBACK_FIT_PRESET
    presets = catalog.get("presets") if isinstance(catalog, dict) else None
    for preset in presets if isinstance(presets, list) else []:
        if isinstance(preset, dict) and preset.get("target") == "request":
            return preset.get("name", FALLBACK_FIT_PRESET)
    return FALLBACK_FIT_PRESET


def _preset_request(prompt: dict, preset: str, budget_fields: dict) -> dict:
    # The live loader's fields, so the preset fits the card for the loader that will run it.
    return comfy_adapters.with_runtime({"workflow": prompt, "preset": preset, **budget_fields})


def _is_rewrite(result) -> bool:
    """The core's apply_preset answer rewrote the workflow (an object with the workflow and its changes)."""
    return (isinstance(result, dict) and isinstance(result.get("workflow"), dict)
            and isinstance(result.get("changes"), list) and bool(result["changes"]))


def apply_cheapest_fix(prompt: dict, plan: dict, budget_fields: dict):
    """(new prompt, applied changes, description). The input prompt is never modified.

    Widget edits or a preset named by a plan change are applied as given; otherwise, when the plan
    has changes a preset can make (applies_by_preset), the catalog's fit-this-card preset applies the
    cheapest of them, combined until the workflow fits."""
    fixed = copy.deepcopy(prompt)
    listed = plan.get("changes")
    changes = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
    for change in changes:
        if not isinstance(change, dict):
            continue
        edits = _edits_of(change)
        if edits:
            applied = apply_edits(fixed, edits)
            if applied:
                return fixed, applied, change.get("description") or change.get("summary") or "widget edits"
        if change.get("preset"):
            result = native_loader.call_json(
                "apply_preset", _preset_request(prompt, change["preset"], budget_fields))
            if _is_rewrite(result):
                return result["workflow"], result["changes"], PRESET_PREFIX + change["preset"]
    if any(c.get("applies_by_preset") or c.get("widget") for c in changes) and budget_fields:
        name = fit_preset_name()
        result = native_loader.call_json("apply_preset", _preset_request(prompt, name, budget_fields))
        if _is_rewrite(result):
            return result["workflow"], result["changes"], PRESET_PREFIX + name
    return prompt, [], None
