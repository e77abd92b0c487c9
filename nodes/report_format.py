"""Plain-text rendering of core results for node bodies, node outputs and log lines."""

GIB = 1024 ** 3


def gib(value) -> str:
    return "n/a" if value is None else f"{value / GIB:.2f} GiB"


def budget_bytes(result: dict, fields: dict):
    return result.get("budget_bytes", fields.get("free_bytes", fields.get("vram_bytes")))


def is_over_budget(result: dict, fields: dict) -> bool:
    """The core's verdict when it gave one; otherwise peak against the budget we passed."""
    # The core says "fits", "tight" (fits with little margin) or "does not fit".
    verdict = str(result.get("verdict") or "").lower()
    if verdict:
        return "not" in verdict or verdict.startswith("over") or "oom" in verdict
    limit = budget_bytes(result, fields)
    peak = result.get("peak_bytes")
    return limit is not None and peak is not None and peak > limit


def change_text(change) -> str:
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
            text = f"node {change.get('node_id')}: {change['widget']} {change.get('from')} -> {change.get('to')}"
        else:
            text = ", ".join(f"{k}={v}" for k, v in change.items() if not isinstance(v, (dict, list)))
    after = change.get("new_peak_bytes", change.get("peak_after_bytes"))
    saves = change.get("saves_bytes", change.get("saving_bytes"))
    if after is not None:
        text += f" (peak {gib(after)})"
    elif saves is not None:
        text += f" (saves {gib(saves)})"
    return text


def stage_table(result: dict) -> str:
    rows = [f"{'stage':<24}{'peak':>12}"]
    for stage in result.get("stages", []) or []:
        rows.append(f"{str(stage.get('name', '?')):<24}{gib(stage.get('peak_bytes')):>12}")
    return "\n".join(rows)


def preflight_report(result: dict, fields: dict, budget_label: str) -> str:
    over = is_over_budget(result, fields)
    limit = budget_bytes(result, fields)
    lines = [stage_table(result), ""]
    peak_line = f"Peak {gib(result.get('peak_bytes'))} in {result.get('peak_stage', '?')}"
    if limit is None:
        lines.append(f"{peak_line}; budget: {budget_label}")
        verdict = "NO BUDGET"
    else:
        lines.append(f"{peak_line}; budget {gib(limit)} ({budget_label})")
        verdict = "OVER BUDGET" if over else ("FITS (tight)" if "tight" in str(result.get("verdict", "")) else "FITS")
    lines.append(f"Verdict: {verdict}")
    changes = result.get("changes") or []
    if over and changes:
        lines.append("Cheapest fixes:")
        lines += [f"  {i + 1}. {change_text(c)}" for i, c in enumerate(changes[:5])]
    if result.get("smallest_gpu"):
        smallest = result["smallest_gpu"]
        lines.append(f"Smallest card that fits as is: {smallest.get('name') if isinstance(smallest, dict) else smallest}")
    for note in (result.get("notes") or [])[:5]:
        lines.append(f"note: {note}")
    unknown = result.get("unknown_nodes") or []
    if unknown:
        lines.append("not estimated (unknown nodes): " + ", ".join(map(str, unknown[:8])))
    return "\n".join(lines)
