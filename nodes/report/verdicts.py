"""The core's verdicts as its catalog lists them (api::catalog() "verdicts": id, text, runs, fits, sized).
Nodes decide from these flags, found by the answer's `verdict_id`, never from the words, so a verdict's
spelling lives only in the core (native/core/catalog/verdict.cpp)."""
from ..native import native_loader


def table() -> dict:
    """{verdict id: {id, text, runs, fits, sized}}; empty when the core is unavailable."""
    try:
        rows = native_loader.catalog().get("verdicts") or []
    except native_loader.NativeUnavailable:
        return {}
    except (ValueError, TypeError, AttributeError, RuntimeError):
        rows = []
    return {r["id"]: r for r in rows if isinstance(r, dict) and "id" in r}


def row(answer):
    """The catalog row of a core answer's verdict (its `verdict_id`), or None (no verdict, or one this
    core does not list)."""
    verdict_id = answer.get("verdict_id") if isinstance(answer, dict) else None
    return table().get(verdict_id) if isinstance(verdict_id, str) else None


def is_unsized(answer) -> bool:
    """The core could not size the run (no peak, no verdict on the card)."""
    r = row(answer)
    return r is not None and not r.get("sized", True)


def is_failure(answer) -> bool:
    """The run was sized and will not complete on the card."""
    r = row(answer)
    return r is not None and r.get("sized", True) and not r.get("runs", False)


def is_tight(answer) -> bool:
    """The run completes, but streams weights or has little margin."""
    r = row(answer)
    return r is not None and r.get("runs", False) and not r.get("fits", False)


def text_of(**flags):
    """The spelling of the verdict with these flags (e.g. fits=True), or None."""
    for r in table().values():
        if all(r.get(k) == v for k, v in flags.items()):
            return r.get("text")
    return None
