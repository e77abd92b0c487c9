"""Issue 23 "one plan everywhere": on the official 2026 templates at 12 and 24 GB, the queue check's
message (warn toast and block message) and the Preflight node's report give the verdict (in the core's
words), the reason and the first change `headroom plan` gives (tests/web/test_presets_core.py holds the panel to the same)."""
import json
import subprocess

import pytest

from conftest import REPO, SHARED, core_built, load_pack

load_pack()
import fakes  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.graph import preflight  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.server.queue_gate import gate_of  # noqa: E402

CLI = REPO / "build" / "headroom"
TEMPLATES = sorted((SHARED / "real-workflows" / "2026").glob("*.json"))


def cli_plan(file, gib):
    out = subprocess.run([str(CLI), "plan", str(file), "--vram", str(gib), "--json"], capture_output=True,
                         text=True, timeout=120)
    return json.loads(out.stdout or "{}")


def queued(workflow, action, gib, monkeypatch):
    sent = []
    monkeypatch.setattr(prompt_handler, "send", lambda event, data, sid: sent.append(data))
    settings.update({"queue_action": action, "budget": str(gib)})
    out = prompt_handler.on_prompt({"prompt": json.loads(json.dumps(workflow)), "client_id": "c"})
    assert prompt_handler.wait_idle()
    return out, sent[-1]


@pytest.mark.parametrize("gib", [12, 24])
def test_queue_message_and_preflight_report_say_what_headroom_plan_says(gib, monkeypatch):
    if not core_built() or not CLI.is_file():
        pytest.skip("the core or the CLI is not built")
    if not TEMPLATES:
        pytest.skip("no 2026 templates")
    native_loader.reset()
    monkeypatch.setattr(prompt_handler, "DECIDE_TIMEOUT_S", 60.0)  # a loaded test machine, not a user
    compared = firsts = 0
    try:
        for file in TEMPLATES:
            plan = cli_plan(file, gib)
            if plan.get("peak_bytes") is None:
                continue
            workflow = json.loads(file.read_text())
            _, warn = queued(workflow, "warn", gib, monkeypatch)
            assert (warn["verdict"], warn["verdict_reason"]) == (plan["verdict"], plan.get("verdict_reason")), file.name
            first = plan["changes"][0]["description"] if plan["verdict"] != "fits" and plan.get("changes") else None
            assert warn["first_change"] == first, file.name
            node_text = preflight.HeadroomPreflight().run(fakes.latent_image(), budget=str(gib),
                                                          prompt=workflow)["result"][1]
            for text in (warn["report"], node_text):
                # The core's verdict words and its reason, as `headroom plan` prints them: no words of their own.
                verdict = f"Verdict: {plan['verdict']}" + (f" ({plan['verdict_reason']})" if plan.get("verdict_reason") else "")
                assert verdict in text, (file.name, verdict, text)
                assert not first or f"First change: {first}" in text, (file.name, text)
                assert not plan.get("verdict_reason") or plan["verdict_reason"] in text, (file.name, text)
            firsts += bool(first)
            if warn["over_budget"]:
                blocked, _ = queued(workflow, "block", gib, monkeypatch)
                _, gate = gate_of(blocked["prompt"])
                message = gate["inputs"]["reason"]
                assert plan["verdict"] in message and (not first or f"First change: {first}" in message), file.name
            compared += 1
        print(f"{gib} GB: {compared} templates compared, {firsts} with a first change")
        assert compared >= 10 and firsts >= 1, (compared, firsts)
    finally:
        settings.reset()
