"""The notice on the first page load after ComfyUI started again when its previous process died in the
middle of a run (issue 21 "reported on the next start", issue 22 "a run that died without a message is
explained"): the stage, the RAM in use, the likely cause and the core's explanation, shown once. The
answer is the real recorder's and core's (tests/web/fixtures/unfinished.json)."""
from .harness import runs_routes

GIB = 1024 ** 3
NOTICE = ".headroom-toast.headroom-unfinished"


def gib(b):
    return f"{b / GIB:.1f} GiB"


def test_the_first_load_after_a_killed_run_shows_its_stage_ram_and_cause_once(open_panel, server):
    runs_routes.reset_state()
    runs_routes.state["unfinished"] = True
    page, errors = open_panel("/templates/flux_schnell.json")
    page.wait_for_selector(NOTICE)
    run, explanation = runs_routes.UNFINISHED["run"], runs_routes.UNFINISHED["explanation"]
    u = run["unfinished"]
    assert page.text_content(f"{NOTICE} div") == "The last run did not finish — Headroom"
    measured = page.text_content(f"{NOTICE} .headroom-measured")
    assert f"stopped in {u['stage']} ({u['node']['type']} #{u['node']['id']})" in measured
    assert f"ComfyUI had {gib(u['rss_bytes'])} of RAM in use" in measured
    assert f"{gib(u['ram_available_bytes'])} of {gib(run['ram_total_bytes'])} system RAM was free" in measured
    assert "Likely cause: no error was recorded" in measured  # the fixture's likely_cause is "unknown"
    # The core's diagnosis and its first fixes, as it gave them: nothing is rewritten here.
    assert page.text_content(f"{NOTICE} .headroom-diagnosis") == explanation["diagnosis"]["text"]
    assert page.eval_on_selector_all(f"{NOTICE} .headroom-fixes li", "ls => ls.map((l) => l.textContent)") == \
        [f["text"] for f in explanation["fixes"][:3]]
    assert page.query_selector(f"{NOTICE} .headroom-apply-fix") is None  # no preset shrinks a killed process
    assert server.wait_until(lambda: runs_routes.state["seen"] == 1), "the page did not say it showed the notice"
    assert errors == []
    # The next load finds the notice seen: nothing is shown again.
    again, errors = open_panel("/templates/flux_schnell.json")
    again.wait_for_timeout(300)
    assert again.query_selector(".headroom-toast") is None
    assert errors == []


def test_a_cause_of_ram_exhausted_is_said_in_the_users_words(open_panel):
    runs_routes.reset_state()
    runs_routes.state["unfinished"] = True
    u = runs_routes.UNFINISHED["run"]["unfinished"]
    cause = u["likely_cause"]
    try:
        u["likely_cause"] = "host_ram_exhausted"
        page, errors = open_panel("/templates/flux_schnell.json")
        page.wait_for_selector(NOTICE)
        assert "Likely cause: system RAM ran out (the OS ended ComfyUI)." in page.text_content(f"{NOTICE} .headroom-measured")
        assert errors == []
    finally:
        u["likely_cause"] = cause


def test_no_notice_when_every_run_finished(open_panel):
    runs_routes.reset_state()
    page, errors = open_panel("/templates/flux_schnell.json")
    page.wait_for_timeout(300)
    assert page.query_selector(".headroom-toast") is None
    assert runs_routes.state["seen"] == 0
    assert errors == []
