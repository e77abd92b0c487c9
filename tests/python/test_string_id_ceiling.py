"""Issue 25: identifier vocabularies (verdicts, stage and decode modes, roles, devices, decoder families)
are enums parsed at the boundary, so few comparisons of them as strings are left in native/. The ceiling
holds the count that scripts/count_string_ids.py measured when they became enums; it may only fall."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CEILING = 28


def _counter():
    spec = importlib.util.spec_from_file_location("count_string_ids", REPO / "scripts" / "count_string_ids.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_string_comparisons_of_identifiers_stay_under_the_ceiling():
    found = list(_counter().sites())
    listing = "\n".join(f"{path}:{n}: {line}" for path, n, line in found)
    assert len(found) <= CEILING, f"{len(found)} comparisons of identifier strings (ceiling {CEILING}):\n{listing}"


def test_the_counter_sees_a_verdict_compared_as_text(tmp_path, monkeypatch):
    module = _counter()
    (tmp_path / "native").mkdir()
    (tmp_path / "native" / "x.cpp").write_text('if (r.verdict == "does not fit") return;\nif (s.mode != "full") {}\n')
    monkeypatch.setattr(module, "REPO", tmp_path)
    assert len(list(module.sites())) == 2
