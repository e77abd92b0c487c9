"""Preflight at queue time: estimates the whole prompt before anything loads and, per the user's
setting, passes silently, warns (websocket toast with peak, stage and fix), blocks with the plan, or
applies the cheapest fix. The prompt is changed only for auto-fix (or a block, which queues nothing),
and for the Preflight nodes' cache stamp.

ComfyUI calls on_prompt synchronously on its event loop, so the handler itself only looks at the prompt
once and hands the estimate to one background thread (preflight_worker.py): in pass and warn mode the
answer does not change the prompt, and the toast reaches the browser when the estimate is done. Block and
auto-fix must decide before the prompt is queued, so the handler waits for that estimate, at most
DECIDE_TIMEOUT_S; past it the prompt goes through unchecked. Whatever the prompt, the settings or the core
answer, on_prompt never raises: Headroom never stands between a user and a run that would run."""
import hashlib
import json
import logging
import threading
import uuid

from . import autofix, settings
from ..comfyui import budget, comfy_adapters
from ..native import core_json, native_loader
from ..report import report_format, verdicts
from .. import recorder as run_recorder
from .preflight_worker import Job, LatestWins, one_line
from .queue_gate import blocked_prompt, gate_node_id

EVENT = "headroom.preflight"
PREFLIGHT_CLASS = "HeadroomPreflight"
log = logging.getLogger("headroom")

# The estimate of a real workflow takes about 1-30 ms (the planner with a budget); one a user waits for
# must still end in bounded time, whatever a hostile header or a 20,000-node prompt costs the core.
DECIDE_TIMEOUT_S = 1.0
# How long pass/warn wait for the Preflight stamp's estimate (about 1 ms for a real workflow), so the stamp
# is exact in the usual case; past it the stamp is filled in when the estimate is done. A prompt of more
# nodes (about 15 ms for 2,000), or one behind another estimate, would not be done in time: no wait.
STAMP_WAIT_S = 0.008
STAMP_WAIT_MAX_NODES = 500
# Nodes serialized per json.dumps call on the worker: one call holds the GIL throughout, and the event loop
# would wait that long; 256 nodes take well under a millisecond.
NODES_PER_CHUNK = 256


def _send(event, data, sid):
    try:
        from server import PromptServer
    except ImportError:
        return
    PromptServer.instance.send_sync(event, data, sid)


# Replaced in tests; the server's send_sync in ComfyUI (thread-safe: it posts to the server's loop).
send = _send

worker = LatestWins()


def wait_idle(timeout=10.0) -> bool:
    """True once the background estimates are done (tests and benchmarks wait on the toasts with it)."""
    return worker.wait_idle(timeout)


def _notify(payload, client_id):
    # A client id that is not a string would reach ComfyUI's sockets lookup and end its message loop; None
    # is ComfyUI's "every client" (an API client that gave none).
    if client_id is not None and not isinstance(client_id, str):
        return
    try:
        send(EVENT, payload, client_id)
    except Exception as e:  # a toast that cannot go out must not undo the decision it reports
        log.warning("Headroom preflight could not send its report to the browser: %s", one_line(e))


def _keep_prediction(prompt_id, plan):
    """Hands the estimate to the run recorder, which sets it beside the measured run (nodes/recorder)."""
    rec = run_recorder.recorder()
    if rec is None or prompt_id is None:
        return
    try:
        rec.predictions.keep(prompt_id, plan)
    except Exception as e:  # the recorder must not cost the preflight its answer
        log.debug("Headroom recorder: prediction not kept: %s", one_line(e))


def _recorded_prompt_id(json_data):
    """The prompt_id the run will have, when the recorder is on (it may set one, hooks.ensure_prompt_id)."""
    if run_recorder.recorder() is None:
        return None
    from ..recorder.hooks import ensure_prompt_id
    return ensure_prompt_id(json_data)


# ---- reading the prompt (on the event loop: one pass, nothing else) ----

def _scan(prompt: dict):
    """(the Preflight nodes, True when one is set to "apply fix": the user choosing auto-fix for this
    workflow)."""
    nodes, node_fix = [], False
    for node in prompt.values():
        if isinstance(node, dict) and node.get("class_type") == PREFLIGHT_CLASS:
            nodes.append(node)
            inputs = node.get("inputs")
            if isinstance(inputs, dict) and inputs.get("action") == "apply fix":
                node_fix = True
    return nodes, node_fix


def _preflight_budget(prompt: dict):
    """The budget typed into a Preflight node set to "apply fix" (not auto, not a link), or None. The node
    is the user choosing auto-fix for this workflow, and its budget is the card that fix must fit, so it
    wins over the settings' budget."""
    for node in prompt.values():
        if not isinstance(node, dict) or node.get("class_type") != PREFLIGHT_CLASS:
            continue
        inputs = node.get("inputs")
        if not isinstance(inputs, dict) or inputs.get("action") != "apply fix":
            continue
        value = inputs.get("budget")
        if isinstance(value, (list, dict)) or value is None:
            continue
        if isinstance(value, str) and value.strip().lower() in ("", "auto"):
            continue
        return value
    return None


# ---- the estimate (on the worker) ----

def _workflow_text(prompt: dict) -> str:
    """The prompt as JSON, without the nodes' `is_changed`, written a chunk of nodes at a time.

    The worker reads the very dict ComfyUI queues; no copy is made on the loop. After the handlers ComfyUI
    only puts converted values back into inputs (validate_inputs: int(), str(), "__value__") and adds
    node["is_changed"] when it runs the prompt (execution.py IsChangedCache), neither of which the estimate
    reads: each node is copied by one C call before it is read, which no other thread can interleave."""
    items = list(prompt.items())
    parts = []
    for start in range(0, len(items), NODES_PER_CHUNK):
        chunk = {}
        for key, node in items[start:start + NODES_PER_CHUNK]:
            if isinstance(node, dict):
                node = dict(node)
                node.pop("is_changed", None)  # ComfyUI's cache key (or our stamp), not part of the workload
            chunk[key] = node
        text = core_json.dumps(chunk)  # NaN/Infinity a client or a node put in the prompt: as strings
        if len(text) > 2:
            parts.append(text[1:-1])
    return "{" + ",".join(parts) + "}"


def _plan_text(prompt: dict, fields: dict) -> str:
    """The core's plan request for `prompt` (comfy_adapters.plan_request) as JSON text."""
    rest = comfy_adapters.plan_request({}, fields)
    rest.pop("workflow", None)
    tail = core_json.dumps(rest)[1:] if rest else "}"
    return '{"workflow":' + _workflow_text(prompt) + ("," + tail if rest else tail)


def _plan(prompt: dict, fields: dict) -> dict:
    plan = json.loads(native_loader.core().plan(_plan_text(prompt, fields)))
    if not isinstance(plan, dict):
        raise ValueError(f"the core's plan: expected a JSON object, got {type(plan).__name__}")
    return plan


def fingerprint_of(plan) -> str:
    """A digest of what a Preflight report depends on in the whole prompt, from the core's plan of it: the
    workload the core read (`job`: models, dtypes, sizes, frames, batch, decode; `workflow`: loaders, unknown
    nodes, stages per node), so a seed or prompt-text change keeps it and a change anywhere that moves the
    estimate does not. Neither part depends on the budget, so free VRAM moving between runs (which would
    re-run everything downstream of the Preflight each time) leaves it, and the queue check's one plan
    with the budget serves both the toast and the stamp. `plan` may be the exception the plan raised: the
    stamp then says the same until that changes."""
    if isinstance(plan, BaseException):
        text = f"no estimate: {type(plan).__name__}"
    elif not isinstance(plan, dict):
        text = f"no estimate: the core answered {type(plan).__name__}"
    else:
        text = core_json.dumps({"job": plan.get("job"), "workflow": plan.get("workflow")})  # the core writes them in one order
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def workload_fingerprint(prompt: dict) -> str:
    """The stamp of `prompt` on its own (one plan without a budget); the handler takes it from the plan it
    makes anyway (fingerprint_of)."""
    try:
        return fingerprint_of(_plan(prompt, {}))
    except Exception as e:  # any failure: the stamp says the same until that changes
        return fingerprint_of(e)


def _fixed_fingerprint(fingerprint: str, applied) -> str:
    """The stamp of a prompt auto-fix changed: the original's workload and the changes applied to it,
    which together decide the fixed workload, so no second plan is asked for."""
    text = fingerprint + core_json.dumps(applied)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Stamp:
    """The Preflight nodes' cache stamp: `value` is the list the nodes carry as node["is_changed"], a value no
    other prompt has until the plan's fingerprint fills it in; `filled` is set then (the handler may wait)."""

    def __init__(self, value=None):
        self.value = [f"pending {uuid.uuid4().hex}" if value is None else value]
        self.filled = threading.Event()

    def fill(self, value: str):
        self.value[0] = value
        self.filled.set()

    def put_on(self, nodes):
        for node in nodes:
            node["is_changed"] = self.value


def _planned(prompt: dict, fields: dict, stamp) -> dict:
    """The core's plan of `prompt`, its fingerprint filled into `stamp` (a Stamp or None) as soon as it is
    known."""
    try:
        plan = _plan(prompt, fields)
    except Exception as e:
        if stamp is not None:
            stamp.fill(fingerprint_of(e))
        raise
    if stamp is not None:
        stamp.fill(fingerprint_of(plan))
    return plan


def _payload(plan: dict, fields: dict, action: str) -> dict:
    changes = plan.get("changes")
    changes = changes if isinstance(changes, list) else []
    return {
        "action": action,
        "verdict": plan.get("verdict"),
        "verdict_id": plan.get("verdict_id"),
        # The catalog's row of that verdict ({id, text, runs, fits, sized}): the browser decides from its flags.
        "verdict_flags": verdicts.row(plan),
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
        # The words the panel and `headroom plan` give as the first change for the same workflow.
        "first_change": report_format.first_change(plan),
        "changes": changes[:5],
        "report": report_format.preflight_report(plan, fields, budget.describe(fields)),
    }


def _with_fix(json_data: dict, fixed: dict, applied, description) -> dict:
    """The queue request with the fixed prompt, the fix recorded in extra_pnginfo["headroom"] (the
    Preflight node reports it). The caller's dicts are left as they are: only new ones are changed. An
    extra_data or extra_pnginfo that is not an object is the client's own; it is kept, unrecorded."""
    out = dict(json_data)
    out["prompt"] = fixed
    extra = out.get("extra_data")
    extra = {} if extra is None else extra
    if isinstance(extra, dict):
        pnginfo = extra.get("extra_pnginfo")
        pnginfo = {} if pnginfo is None else pnginfo
        if isinstance(pnginfo, dict):
            out["extra_data"] = {**extra, "extra_pnginfo": {**pnginfo, "headroom": {"applied": applied,
                                                                                   "fix": description}}}
    return out


def _judge(json_data: dict, prompt: dict, action: str, node_fix: bool, current: dict, stamp=None):
    """(the queue request to queue, the payloads to send) for `action`; never raises. One plan: its
    fingerprint goes into `stamp`, and a fix is applied without planning again."""
    try:
        own = _preflight_budget(prompt) if node_fix else None
        fields = budget.resolve(current.get("budget", "auto") if own is None else own)
        plan = _planned(prompt, fields, stamp)
        _keep_prediction(json_data.get("prompt_id"), plan)
        payload = _payload(plan, fields, action)
        # Only a run that will not complete is acted on (the verdict's `runs` flag is false: out of VRAM or
        # of host RAM); one that streams weights or runs with little margin is reported and left alone.
        if not payload["over_budget"]:
            return json_data, [payload]
        if action == "auto-fix":
            fixed, applied, description = autofix.apply_cheapest_fix(prompt, plan, fields)
            if applied:
                if stamp is not None:
                    Stamp(_fixed_fingerprint(stamp.value[0], applied)).put_on(_scan(fixed)[0])
                return _with_fix(json_data, fixed, applied, description), [
                    {**payload, "applied": applied, "fix": description, "preset": autofix.preset_named(description)}]
            payload["fix_unavailable"] = "no fix Headroom can apply itself; the plan lists what to change by hand"
        if action == "block":
            why = (f"{payload['verdict']}: {payload['verdict_reason']}" if payload.get("verdict_reason")
                   else str(payload.get("verdict") or verdicts.text_of(sized=True, runs=False)))
            out = dict(json_data)
            at = gate_node_id(prompt, payload["changes"], [k for k, n in prompt.items()
                                                             if isinstance(n, dict) and n.get("class_type") == PREFLIGHT_CLASS])
            out["prompt"] = blocked_prompt(f"Headroom blocked this run ({why}; change the queue action in "
                                           "the Headroom settings to allow it):\n" + payload["report"], at)
            return out, [{**payload, "blocked": True}]
        return json_data, [payload]
    except Exception as e:
        # Never stand between the user and their run because Headroom cannot judge it: a missing core, a
        # prompt or a budget the core refuses, an answer it should not have given.
        message = one_line(e)
        log.warning("Headroom preflight skipped: %s", message)
        return json_data, [{"action": action, "error": message}]


class _Background(Job):
    """Pass and warn: one plan, whose fingerprint fills the stamp (the handler may be waiting for it), then
    the toast. Pass without the recorder plans without a budget (no planner: the quickest answer)."""

    def __init__(self, prompt, stamp, action, current, client_id, prompt_id=None):
        self.prompt, self.stamp, self.action = prompt, stamp, action
        self.current, self.client_id, self.prompt_id = current, client_id, prompt_id

    def run(self):
        try:
            if self.action != "pass":
                self._warn()
            elif self.prompt_id is not None:  # pass: no toast, but the recorder wants the estimate of the run
                self._predict()
            elif self.stamp is not None:
                try:
                    _planned(self.prompt, {}, self.stamp)
                except Exception as e:  # the stamp already says so
                    log.debug("Headroom preflight: no estimate for the stamp: %s", one_line(e))
        finally:
            self.dropped()

    def _warn(self):
        _, payloads = _judge({"prompt": self.prompt, "prompt_id": self.prompt_id}, self.prompt, self.action,
                             False, self.current, self.stamp)
        for payload in payloads:
            _notify(payload, self.client_id)

    def _predict(self):
        try:
            fields = budget.resolve(self.current.get("budget", "auto"))
            _keep_prediction(self.prompt_id, _planned(self.prompt, fields, self.stamp))
        except Exception as e:
            log.debug("Headroom recorder: no prediction for %s: %s", self.prompt_id, one_line(e))

    def dropped(self):
        if self.stamp is not None:
            self.stamp.filled.set()  # nobody waits on a stamp that will not be filled; it stays "pending"


class _Decision(Job):
    """Block and auto-fix: the judgement the handler waits for; it sends nothing itself."""

    def __init__(self, json_data, prompt, action, node_fix, current, stamp):
        self.args = (json_data, prompt, action, node_fix, current, stamp)
        self.decided = threading.Event()
        self.result = None

    def run(self):
        try:
            self.result = _judge(*self.args)
        finally:
            self.decided.set()

    def dropped(self):
        self.decided.set()


# ---- the handler (on the event loop) ----

def _stamp_in_background(prompt, nodes, action, current, client_id, prompt_id=None):
    """Marks each Preflight node with the fingerprint of the whole prompt's workload, computed on the
    worker, and hands it the warn toast if any.

    ComfyUI caches a node on its own inputs; a Preflight's report depends on the whole prompt (a decode
    node downstream, another loader), so a cached Preflight showed a report for another workflow or none.
    ComfyUI takes node["is_changed"] as the node's IS_CHANGED value when the prompt carries one
    (execution.py IsChangedCache), and reads it only when the prompt starts running. Until the estimate is
    done the stamp is a value no other prompt has: a Preflight read before then runs again (its report is
    never stale) rather than being served from the cache; the worker then writes the fingerprint into the
    same list, so the Preflight runs again exactly when its report would change."""
    stamp = Stamp() if nodes else None
    if stamp is None and action == "pass" and prompt_id is None:
        return
    job = _Background(prompt, stamp, action, current, client_id, prompt_id)
    quick = stamp is not None and len(prompt) <= STAMP_WAIT_MAX_NODES and worker.idle()
    worker.submit(job)
    if stamp is not None:  # after the only step that can fail, so a failure leaves the prompt as it came
        stamp.put_on(nodes)
    if quick:
        stamp.filled.wait(STAMP_WAIT_S)


def on_prompt(json_data):
    try:
        return _on_prompt(json_data)
    except Exception as e:  # a bug of ours must not cost the user the run (nor a traceback in their log)
        log.warning("Headroom preflight skipped (internal error; the prompt is queued unchanged): %s",
                    one_line(e))
        return json_data


def _on_prompt(json_data):
    prompt = json_data.get("prompt") if isinstance(json_data, dict) else None
    if not isinstance(prompt, dict) or not prompt:
        return json_data
    current = settings.get()
    client_id = json_data.get("client_id")
    nodes, node_fix = _scan(prompt)
    action = "auto-fix" if node_fix else current.get("queue_action", "warn")
    prompt_id = _recorded_prompt_id(json_data)
    if action not in ("block", "auto-fix"):
        _stamp_in_background(prompt, nodes, action, current, client_id, prompt_id)
        return json_data
    stamp = Stamp() if nodes else None
    job = _Decision(json_data, prompt, action, node_fix, current, stamp)
    worker.submit(job)
    if job.decided.wait(DECIDE_TIMEOUT_S) and job.result is not None:
        out, payloads = job.result
    else:
        timed_out = (f"Headroom could not estimate this prompt within {DECIDE_TIMEOUT_S:g} s, so it was queued "
                     "unchecked")
        log.warning("Headroom preflight skipped: %s", timed_out)
        out, payloads = json_data, [{"action": action, "error": timed_out}]
    for payload in payloads:
        _notify(payload, client_id)
    if out is json_data and stamp is not None:  # as it came: the decision's plan fills the stamp, even late
        stamp.put_on(nodes)
    return out
