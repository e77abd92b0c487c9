"""Preflight at queue time: estimates the whole prompt before anything loads and, per the user's
setting, passes silently, warns (websocket toast with peak, stage and fix), blocks with the plan, or
applies the cheapest fix. The prompt is changed only for auto-fix (or a block, which queues nothing)."""
import copy
import hashlib
import json
import logging

from . import autofix, budget, comfy_adapters, native_loader, report_format, settings, verdicts
from .queue_gate import blocked_prompt

EVENT = "headroom.preflight"
log = logging.getLogger("headroom")


def _send(event, data, sid):
    try:
        from server import PromptServer
    except ImportError:
        return
    PromptServer.instance.send_sync(event, data, sid)


# Replaced in tests; the server's send_sync in ComfyUI.
send = _send


def _preflight_autofix(prompt: dict) -> bool:
    """A Preflight node set to "apply fix" is the user choosing auto-fix for this workflow."""
    return any(isinstance(n, dict) and n.get("class_type") == "HeadroomPreflight"
               and (n.get("inputs") or {}).get("action") == "apply fix" for n in prompt.values())


def _preflight_budget(prompt: dict):
    """The budget typed into a Preflight node set to "apply fix" (not auto, not a link), or None. The node
    is the user choosing auto-fix for this workflow, and its budget is the card that fix must fit, so it
    wins over the settings' budget."""
    for node in prompt.values():
        if not isinstance(node, dict) or node.get("class_type") != PREFLIGHT_CLASS:
            continue
        inputs = node.get("inputs") or {}
        value = inputs.get("budget")
        if inputs.get("action") != "apply fix" or isinstance(value, (list, dict)) or value is None:
            continue
        if isinstance(value, str) and value.strip().lower() in ("", "auto"):
            continue
        return value
    return None


def _payload(plan: dict, fields: dict, action: str) -> dict:
    changes = plan.get("changes") or []
    return {
        "action": action,
        "verdict": plan.get("verdict"),
        # The catalog's row of that verdict ({id, text, runs, fits, sized}): the browser decides from its flags.
        "verdict_flags": verdicts.row(plan.get("verdict")),
        "over_budget": report_format.is_over_budget(plan, fields),
        # False: the core could not estimate this prompt (e.g. no diffusion loader); never a fit.
        "estimated": report_format.is_estimated(plan),
        "not_estimated": None if report_format.is_estimated(plan) else report_format.not_estimated_reason(plan),
        # Which loader the verdict is for, why, and what the planner advises (docs/runtime.md).
        "runtime": plan.get("runtime"),
        "verdict_reason": plan.get("verdict_reason"),
        "advice": plan.get("advice"),
        "slowdown": plan.get("slowdown"),
        "peak_bytes": plan.get("peak_bytes"),
        "peak_stage": plan.get("peak_stage"),
        "budget_bytes": report_format.budget_bytes(plan, fields),
        "fix": report_format.change_text(changes[0]) if changes else None,
        "changes": changes[:5],
        "report": report_format.preflight_report(plan, fields, budget.describe(fields)),
    }


PREFLIGHT_CLASS = "HeadroomPreflight"


def workload_fingerprint(prompt: dict) -> str:
    """A digest of what a Preflight report depends on in the whole prompt: the core's estimate without a
    budget (models, dtypes, sizes, frames, batch, decode), so a seed or prompt-text change keeps it and a
    change anywhere that moves the estimate does not. Free VRAM is left out on purpose: it moves between
    runs and would re-run everything downstream of the Preflight each time."""
    try:
        base = native_loader.call_json("plan", comfy_adapters.plan_request(_without_stamps(prompt), {}))
        text = json.dumps(base, sort_keys=True, default=str)
    except (native_loader.NativeUnavailable, ValueError, RuntimeError, TypeError) as e:
        text = f"no estimate: {type(e).__name__}"  # stable: the report says the same until that changes
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _without_stamps(prompt: dict) -> dict:
    return {k: ({kk: vv for kk, vv in n.items() if kk != "is_changed"} if isinstance(n, dict) else n)
            for k, n in prompt.items()}


def stamp_preflight_nodes(prompt) -> None:
    """Marks each Preflight node with the fingerprint of the whole prompt's workload.

    ComfyUI caches a node on its own inputs; a Preflight's report depends on the whole prompt (a decode
    node downstream, another loader), so a cached Preflight showed a report for another workflow or none.
    ComfyUI takes node["is_changed"] as the node's IS_CHANGED value when the prompt carries one
    (execution.py IsChangedCache), so the Preflight runs again exactly when its report would change."""
    if not isinstance(prompt, dict):
        return
    nodes = [n for n in prompt.values() if isinstance(n, dict) and n.get("class_type") == PREFLIGHT_CLASS]
    if not nodes:
        return
    stamp = [workload_fingerprint(prompt)]
    for node in nodes:
        node["is_changed"] = stamp


def on_prompt(json_data):
    out = _on_prompt(json_data)
    if isinstance(out, dict):
        stamp_preflight_nodes(out.get("prompt"))
    return out


def _on_prompt(json_data):
    prompt = json_data.get("prompt") if isinstance(json_data, dict) else None
    if not isinstance(prompt, dict) or not prompt:
        return json_data
    current = settings.get()
    node_fix = _preflight_autofix(prompt)
    action = "auto-fix" if node_fix else current["queue_action"]
    if action == "pass":
        return json_data
    client_id = json_data.get("client_id")
    try:
        own = _preflight_budget(prompt) if node_fix else None
        fields = budget.resolve(current["budget"] if own is None else own)
        plan = native_loader.call_json("plan", comfy_adapters.plan_request(prompt, fields))
    except (native_loader.NativeUnavailable, ValueError, RuntimeError) as e:
        # Never stand between the user and their run because Headroom cannot judge it.
        log.warning("Headroom preflight skipped: %s", e)
        send(EVENT, {"action": action, "error": str(e)}, client_id)
        return json_data
    payload = _payload(plan, fields, action)
    # Only a run that will not complete is acted on (the verdict's `runs` flag is false: out of VRAM or of
    # host RAM); one that streams weights or runs with little margin is reported and left alone.
    if not payload["over_budget"]:
        send(EVENT, payload, client_id)
        return json_data
    if action == "auto-fix":
        fixed, applied, description = autofix.apply_cheapest_fix(prompt, plan, fields)
        if applied:
            out = dict(json_data)
            out["prompt"] = fixed
            extra = copy.deepcopy(out.get("extra_data") or {})
            extra.setdefault("extra_pnginfo", {})["headroom"] = {"applied": applied, "fix": description}
            out["extra_data"] = extra
            send(EVENT, {**payload, "applied": applied, "fix": description}, client_id)
            return out
        payload["fix_unavailable"] = "no fix Headroom can apply itself; the plan lists what to change by hand"
    if action == "block":
        send(EVENT, {**payload, "blocked": True}, client_id)
        out = dict(json_data)
        why = f"{payload['verdict']}: {payload['verdict_reason']}" if payload.get("verdict_reason") else "over budget"
        out["prompt"] = blocked_prompt(f"Headroom blocked this run ({why}; change the queue action in "
                                       "the Headroom settings to allow it):\n" + payload["report"])
        return out
    send(EVENT, payload, client_id)
    return json_data
