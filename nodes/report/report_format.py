"""Plain-text rendering of core results for node bodies, node outputs and log lines."""
from . import verdicts

GIB = 1024 ** 3


def gib(value) -> str:
    return "n/a" if value is None else f"{value / GIB:.2f} GiB"


def budget_bytes(result: dict, fields: dict):
    return result.get("budget_bytes", fields.get("free_bytes", fields.get("vram_bytes")))


def is_estimated(result: dict) -> bool:
    """False when the core could not estimate the run (no diffusion loader, unknown model...): it then
    gives no peak and an unsized verdict, which must never read as a fit."""
    return result.get("peak_bytes") is not None and not verdicts.is_unsized(result)


def not_estimated_reason(result: dict) -> str:
    reason = result.get("reason")
    if not reason:
        notes = result.get("notes") or (result.get("workflow") or {}).get("notes") or []
        reason = notes[0] if notes else None
    return str(reason or "the core gave no peak for this workflow")


def _node_name(node) -> str:
    if isinstance(node, dict):
        kind = node.get("type") or node.get("class_type") or "?"
        return f"{kind} (node {node['id']})" if node.get("id") is not None else str(kind)
    return str(node)


def is_over_budget(result: dict, fields: dict) -> bool:
    """The core's verdict when it gave one; otherwise peak against the budget we passed."""
    # The catalog's flags say which verdicts mean the run will not complete (nodes/report/verdicts.py).
    if verdicts.row(result) is not None:
        return verdicts.is_failure(result)
    limit = budget_bytes(result, fields)
    peak = result.get("peak_bytes")
    return limit is not None and peak is not None and peak > limit


def node_titles(prompt) -> dict:
    """{node id: title} of an API prompt (the frontend writes each node's title in _meta.title), so a
    message names "Load Diffusion Model", not the execution path "194:46" of a node inside a subgraph."""
    out = {}
    for key, node in (prompt.items() if isinstance(prompt, dict) else ()):
        meta = node.get("_meta") if isinstance(node, dict) else None
        title = meta.get("title") if isinstance(meta, dict) else None
        if isinstance(title, str) and title.strip():
            out[str(key)] = title.strip()
    return out


def change_text(change, titles=None) -> str:
    if not isinstance(change, dict):
        return str(change)
    for key in ("description", "summary", "text", "title"):
        if change.get(key):
            text = str(change[key])
            break
    else:
        if "preset" in change:
            text = f"preset {change['preset']}"
        elif "widget" in change:
            node_id = str(change.get("node_id"))
            name = f'"{titles[node_id]}"' if titles and node_id in titles else f"node {node_id}"
            text = f"{name}: {change['widget']} {change.get('from')} -> {change.get('to')}"
        else:
            text = ", ".join(f"{k}={v}" for k, v in change.items() if not isinstance(v, (dict, list)))
    after = change.get("new_peak_bytes", change.get("peak_after_bytes"))
    saves = change.get("saves_bytes", change.get("saving_bytes"))
    if after is not None:
        text += f" (peak {gib(after)})"
    elif saves is not None:
        text += f" (saves {gib(saves)})"
    return text


# The words for the loader a verdict is for (docs/runtime.md); the core's `runtime` field spells the key.
LOADER_WORDS = {"dynamic": "dynamic VRAM", "legacy": "legacy loader"}


def loader_text(result: dict):
    """ "dynamic VRAM" / "legacy loader" for the core's `runtime`, or None when the answer names none."""
    runtime = result.get("runtime")
    return LOADER_WORDS.get(runtime, str(runtime)) if runtime else None


def verdict_text(result: dict, fields: dict) -> str:
    """The verdict line's words: the core's verdict and its reason ("does not fit (runs out of VRAM in
    sample)", "streams (sample streams weights, about 2.4x slower)", "fits"), as the panel, the toasts and
    `headroom plan` say them. An answer without a verdict gets the catalog's words for its peak against
    the budget."""
    verdict = result.get("verdict")
    if not verdict:
        over = is_over_budget(result, fields)
        verdict = verdicts.text_of(sized=True, runs=False) if over else verdicts.text_of(fits=True)
    reason = result.get("verdict_reason")
    return f"{verdict} ({reason})" if reason else str(verdict or "?")


# What the report says where the core gave no verdict: `headroom plan`'s words for a run without a card.
NO_CARD_TEXT = "no card given"


def unsized_text(result: dict) -> str:
    """The core's word for a run it could not size ("unknown"): the answer's own, unless its catalog row
    says it was sized (then no peak came with it, and the catalog's word for an unsized run is said)."""
    verdict = result.get("verdict") if verdicts.is_unsized(result) or verdicts.row(result) is None else None
    return str(verdict or verdicts.text_of(sized=False) or "?")


def first_change(result: dict):
    """The plan's first change in the core's words, for a run that will not complete or runs with little
    margin (the rule the panel and `headroom plan` follow), or None."""
    changes = result.get("changes") or []
    if not changes or not isinstance(changes[0], dict):
        return None
    # verdicts reads the answer's verdict_id, not its words.
    if not (verdicts.is_failure(result) or verdicts.is_tight(result)):
        return None
    change = changes[0]
    return str(change.get("description") or change.get("summary") or change.get("title") or change_text(change))


def stage_table(result: dict) -> str:
    rows = [f"{'stage':<24}{'peak':>12}"]
    for stage in result.get("stages", []) or []:
        rows.append(f"{str(stage.get('name', '?')):<24}{gib(stage.get('peak_bytes')):>12}")
    return "\n".join(rows)


def preflight_report(result: dict, fields: dict, budget_label: str) -> str:
    if not is_estimated(result):
        lines = [f"Headroom could not estimate this workflow: {not_estimated_reason(result)}.",
                 f"Verdict: {unsized_text(result)} (no peak, so no verdict: this is not a fit)"]
        unknown = result.get("unknown_nodes") or []
        if unknown:
            lines.append("not estimated (unknown nodes): " + ", ".join(_node_name(n) for n in unknown[:8]))
        return "\n".join(lines)
    over = is_over_budget(result, fields)
    limit = budget_bytes(result, fields)
    lines = [stage_table(result), ""]
    peak_line = f"Peak {gib(result.get('peak_bytes'))} in {result.get('peak_stage', '?')}"
    if limit is None:
        lines.append(f"{peak_line}; budget: {budget_label}")
        verdict = NO_CARD_TEXT
    else:
        lines.append(f"{peak_line}; budget {gib(limit)} ({budget_label})")
        verdict = verdict_text(result, fields)
    loader = loader_text(result)
    lines.append(f"Verdict: {verdict}" + (f" [{loader}]" if loader else ""))
    first = first_change(result)
    if first:
        lines.append(f"First change: {first}")
    if result.get("advice"):
        lines.append(f"Advice: {result['advice']}")
    changes = result.get("changes") or []
    if over and changes:
        lines.append("Cheapest fixes:")
        lines += [f"  {i + 1}. {change_text(c)}" for i, c in enumerate(changes[:5])]
    # The core names both cards; each line says which one it is.
    for key, label in (("smallest_gpu_runs", "Smallest card that runs it unchanged"),
                       ("smallest_gpu", "Smallest card that holds it fully resident")):
        smallest = result.get(key)
        if smallest:
            lines.append(f"{label}: {smallest.get('name') if isinstance(smallest, dict) else smallest}")
    for note in (result.get("notes") or [])[:5]:
        lines.append(f"note: {note}")
    unknown = result.get("unknown_nodes") or []
    if unknown:
        lines.append("not estimated (unknown nodes): " + ", ".join(_node_name(n) for n in unknown[:8]))
    return "\n".join(lines)
