"""Fixtures of the browser tests: one localhost server and one chromium for the session, and
`open_panel`, which loads web/*.js on a fresh page over a graph built from a real template."""
from pathlib import Path

import pytest

from .harness.browser import CHROMIUM, launch
from .harness.mock_routes import mock
from .harness.server import TEMPLATES, Server

# Long enough for a loaded 2-core machine, short enough that a broken panel fails in seconds.
TIMEOUT_MS = 10_000

SETUP = """async ({ template, flavour }) => {
  const { makeComfy } = await import("/harness/fake_comfy.js");
  const workflow = await (await fetch(template)).json();
  const recorded = (await (await fetch("/fixtures/recorded-graphs.json")).json()).graphs[template.slice(1)];
  if (!recorded) throw new Error(`no recording of ${template}`);
  window.__comfy = makeComfy(workflow, flavour, { "Headroom.Budget": "auto", "Headroom.QueueAction": "warn" }, recorded);
  await import("/extensions/headroom/headroom.js");
  await window.__comfy.extensions[0].setup();
  window.__comfy.tabs[0].render(document.getElementById("sidebar"));
}"""

# The panel has its three presets and their previewed peaks (the label gains "before → after").
READY = """() => document.querySelectorAll(".headroom-preset").length === 3
  && document.querySelector(".headroom-preset-label")?.textContent.includes("→")"""


@pytest.fixture(scope="session")
def templates():
    if not TEMPLATES.is_dir():
        pytest.skip(f"real workflow templates not found at {TEMPLATES}")
    return TEMPLATES


@pytest.fixture(scope="session")
def server():
    server = Server(mock)
    yield server
    server.close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)")
    with launch() as context:
        context.set_default_timeout(TIMEOUT_MS)
        yield context


@pytest.fixture
def open_panel(templates, browser, server):
    """open_panel(template, flavour="modern") -> (page, errors): the panel rendered and ready;
    `errors` collects the page's uncaught exceptions. Pages close when the test ends, pass or fail."""
    pages = []

    def open_(template, flavour="modern"):
        page = browser.new_page()
        pages.append(page)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.url)
        page.evaluate(SETUP, {"template": template, "flavour": flavour})
        page.wait_for_function(READY)
        return page, errors

    yield open_
    for page in pages:
        page.close()
