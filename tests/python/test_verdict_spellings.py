"""The verdicts are spelled once, in the core (native/core/catalog/verdict.cpp), and listed by its catalog:
the nodes and the browser decide from the catalog's flags, so neither holds a verdict's spelling."""
import json
import re
from pathlib import Path

import pytest

import fakes
from conftest import core_built, native_core_or_none

REPO = Path(__file__).resolve().parents[2]
# A verdict spelled as a string literal: quoted, and either compared with or tested against.
SPELLINGS = r"(fits|tight|does not fit|does_not_fit|unknown)"
LITERAL = re.compile(r"(==|!=|===|!==|\bin\s*\(|\bin\s*\[|\.test\()\s*[\"']" + SPELLINGS + r"[\"']|[\"']" + SPELLINGS +
                     r"[\"']\s*(==|!=|===|!==|\bin\b)|[\"']does[ _]not[ _]fit[\"']")


def test_nodes_and_web_hold_no_verdict_literal():
    found = []
    for path in sorted((REPO / "nodes").rglob("*.py")) + sorted((REPO / "web").glob("*.js")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LITERAL.search(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []


def test_the_pattern_catches_what_it_is_for():
    for line in ['if v == "tight":', 'verdict === "tight"', '"does not fit"', "x in ('fits', 'tight')",
                 "/not|over/.test(v) || v === 'unknown'"]:
        assert LITERAL.search(line), line
    assert not LITERAL.search('el("div", "headroom-verdict tight")')


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
def test_catalog_spellings_are_what_the_estimator_emits_and_the_fakes_copy():
    core = native_core_or_none()
    catalog = json.loads(core.catalog())
    assert catalog["verdicts"] == fakes.VERDICTS
    texts = {v["text"] for v in catalog["verdicts"]}
    model = catalog["models"][0]["name"]
    seen = set()
    for gib in (0.5, 4, 8, 24, 80, 141):
        out = json.loads(core.estimate(json.dumps({"model": model, "vram": gib})))
        assert out["verdict"] in texts
        seen.add(out["verdict"])
    sized = {v["text"] for v in catalog["verdicts"] if v["sized"]}
    assert len(seen & sized) >= 2


def test_web_mock_routes_carry_the_same_verdicts():
    import importlib.util
    spec = importlib.util.spec_from_file_location("mock_routes", REPO / "tests" / "web" / "harness" / "mock_routes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.VERDICTS == fakes.VERDICTS
