"""Presets in the browser against the real core (issue 23 #1, #2, issue 25): applying any preset puts the
very workflow the core priced on screen, so the estimate of the graph then equals the row's preview;
Undo gives back the graph byte for byte; applying is one core call and its answer carries the new plan."""
import json

import pytest

from .conftest import SETUP, TIMEOUT_MS
from .harness.core_routes import core_routes, load_core
from .harness.server import Server, TEMPLATES

GIB = 1024 ** 3
TEMPLATE = "/templates/video_wan2_2_5B_ti2v.json"


@pytest.fixture
def core_server():
    call = load_core()
    if call is None:
        pytest.skip("the core is not built (build/capi)")
    counts = {}
    server = Server(core_routes(call, 12 * GIB, counts))
    yield server, counts
    server.close()


@pytest.fixture
def template(templates):
    """TEMPLATE's file, or the test is skipped."""
    path = templates / TEMPLATE.removeprefix("/templates/")
    if not path.is_file():
        pytest.skip(f"no {TEMPLATE}")
    return path


def open_template(page, server):
    """The panel over TEMPLATE, once every preset row has its previewed figures."""
    page.goto(server.url)
    page.evaluate(SETUP, {"template": TEMPLATE, "flavour": "modern"})
    page.wait_for_function("() => document.querySelectorAll('.headroom-preset-label').length >= 5 && "
                           "[...document.querySelectorAll('.headroom-preset-label')].every((l) => l.textContent.includes('→'))",
                           timeout=TIMEOUT_MS * 3)


def test_every_preset_applies_what_it_previews_and_undo_restores_it(template, browser, core_server):
    server, counts = core_server
    page = browser.new_page()
    try:
        open_template(page, server)
        names = page.eval_on_selector_all(".headroom-preset", "rows => rows.map((r) => r.dataset.preset)")
        original = page.evaluate("() => JSON.stringify(window.__comfy.graph.serialize())")
        befores = set()
        swapped = False
        for name in names:
            if page.is_disabled(f'.headroom-preset[data-preset="{name}"] button'):
                continue  # changes nothing here
            row = page.text_content(f'.headroom-preset[data-preset="{name}"] .headroom-preset-label')
            calls = dict(counts)
            page.click(f'.headroom-preset[data-preset="{name}"] button')
            page.wait_for_function("(n) => document.querySelector('.headroom-undo')?.textContent === `Undo ${n}`", arg=name)
            shown = page.evaluate("() => window.__comfy.graph.serialize()")
            swapped = swapped or any(n["type"] == "VAEDecodeTiled" for n in shown["nodes"])
            # The graph on screen, estimated again by the core, gives the row's preview.
            again = counts.get("plan", 0)
            estimate = server.mock("POST", "/headroom/plan", {"workflow": shown})[1]
            counts["plan"] = again
            assert estimate["peak_bytes"] is not None
            applied = [r for r in server.requests if r["route"] == "/headroom/apply-preset"][-1]
            assert applied["body"]["preset"] == name
            # One core call to apply, no estimate after it: the answer carried the plan.
            assert counts.get("apply_preset", 0) == calls.get("apply_preset", 0) + 1
            assert counts.get("plan", 0) == calls.get("plan", 0)
            headline = page.text_content(".headroom-verdict")
            assert f"{estimate['peak_bytes'] / GIB:.1f} GiB" in headline or estimate["verdict"] in headline, (name, headline)
            assert row.endswith(f"→ {estimate['peak_bytes'] / GIB:.1f} GiB"), (name, row)
            befores.add(row.split(": ")[1].split(" →")[0])
            page.click(".headroom-undo")
            page.wait_for_function("() => !document.querySelector('.headroom-undo')")
            assert page.evaluate("() => JSON.stringify(window.__comfy.graph.serialize())") == original
        assert len(befores) == 1, f"rows judged on different cards: {befores}"
        assert swapped, "no preset replaced the VAE decode node"
    finally:
        page.close()


def test_the_oom_toast_asks_the_core_once_and_offers_its_choice(template, browser, core_server):
    """Issue 25: the toast's preset is one core request (suggest_preset), not one apply-preset per preset
    ranked in the browser; the button names the core's choice and the body its before/after words."""
    server, counts = core_server
    page = browser.new_page()
    try:
        open_template(page, server)
        calls = dict(counts)
        page.evaluate("() => window.__comfy.api.emit('execution_error', { exception_type: 'torch.OutOfMemoryError', "
                      "exception_message: 'CUDA out of memory. Tried to allocate 100.00 MiB' })")
        page.wait_for_selector(".headroom-apply-fix", timeout=TIMEOUT_MS * 3)
        assert counts.get("suggest_preset", 0) == calls.get("suggest_preset", 0) + 1
        assert counts.get("apply_preset", 0) == calls.get("apply_preset", 0)
        workflow = page.evaluate("() => window.__comfy.graph.serialize()")
        chosen = load_core()("suggest_preset", {"workflow": workflow, "vram_bytes": 12 * GIB})["chosen"]
        assert chosen is not None
        assert page.text_content(".headroom-apply-fix") == f"Apply {chosen['preset']}"
        detail = page.text_content(".headroom-fix-detail")
        assert f"{chosen['before']['verdict']} ({chosen['before']['peak_bytes'] / GIB:.1f} GiB)" in detail
        assert f"→ {chosen['after']['verdict']} ({chosen['after']['peak_bytes'] / GIB:.1f} GiB)" in detail
    finally:
        page.close()


def test_a_broken_model_file_withholds_every_preset_rows_verdict(template, browser, tmp_path):
    """Issue 23: a 0-byte diffusion model gets no verdict from the plan, and none after a preset either:
    each row that changes something says why instead of "fits"."""
    call = load_core()
    if call is None:
        pytest.skip("the core is not built (build/capi)")
    workflow = json.loads(template.read_text())
    unet = next(n for n in workflow["nodes"] if n["type"] == "UNETLoader")
    (tmp_path / "diffusion_models").mkdir()
    (tmp_path / "diffusion_models" / unet["widgets_values"][0]).write_bytes(b"")
    server = Server(core_routes(call, 12 * GIB, {}, models_dir=tmp_path))
    page = browser.new_page()
    try:
        open_template(page, server)
        rows = page.eval_on_selector_all(".headroom-preset", """rows => rows.map((r) => ({
          verdict: r.querySelector('.headroom-preset-label').dataset.verdict,
          changes: !r.querySelector('button').disabled,
          note: r.querySelector('.headroom-preset-withheld')?.textContent ?? null }))""")
        assert rows and all(r["verdict"] == "unknown" for r in rows), rows
        changing = [r for r in rows if r["changes"]]
        assert changing, rows
        for r in changing:
            assert r["note"] and f"UNETLoader #{unet['id']}" in r["note"] and unet["widgets_values"][0] in r["note"], r
        assert "fits" not in " ".join(page.eval_on_selector_all(".headroom-preset-effect", "els => els.map((e) => e.textContent)"))
    finally:
        page.close()
        server.close()


SETUP_ANY = """async ({ template }) => {
  const { makeComfy } = await import("/harness/fake_comfy.js");
  const workflow = await (await fetch(template)).json();
  window.__comfy = makeComfy(workflow, "modern", { "Headroom.Budget": "auto", "Headroom.QueueAction": "warn" }, null);
  await import("/extensions/headroom/headroom.js");
  await window.__comfy.extensions[0].setup();
  window.__comfy.tabs[0].render(document.getElementById("sidebar"));
}"""


@pytest.mark.parametrize("gib", [12, 24])
def test_the_panel_and_headroom_plan_give_the_same_verdict_and_first_change(templates, browser, gib):
    """Issue 23 "one plan everywhere": on the official 2026 templates the panel's verdict and first change
    are those of `headroom plan` on the same card."""
    import subprocess
    from .harness.core_routes import REPO
    call = load_core()
    cli = REPO / "build" / "headroom"
    if call is None or not cli.is_file():
        pytest.skip("the core or the CLI is not built")
    files = sorted((templates / "2026").glob("*.json"))[:6]
    if not files:
        pytest.skip("no 2026 templates")
    server = Server(core_routes(call, gib * GIB, {}))
    page = browser.new_page()
    compared = firsts = 0
    try:
        for file in files:
            plan = json.loads(subprocess.run([str(cli), "plan", str(file), "--vram", str(gib),
                                              "--json"], capture_output=True, text=True).stdout or "{}")
            if plan.get("peak_bytes") is None:
                continue
            page.goto(server.url)
            page.evaluate(SETUP_ANY, {"template": f"/templates/2026/{file.name}"})
            page.wait_for_selector(".headroom-verdict", timeout=TIMEOUT_MS * 3)
            headline = page.text_content(".headroom-verdict")
            assert headline.startswith(plan["verdict"]), (file.name, headline, plan["verdict"])
            compared += 1
            first = page.query_selector(".headroom-first-change")
            if plan["verdict"] != "fits" and plan.get("changes"):
                assert first is not None, file.name
                assert first.text_content() == f"First change: {plan['changes'][0]['description']}", file.name
                firsts += 1
        assert compared >= 3 and (gib == 24 or firsts >= 1), (compared, firsts)
    finally:
        page.close()
        server.close()
