#!/usr/bin/env python3
"""Manual check of Headroom in a real ComfyUI with the current frontend from PyPI (docs/frontend-check.md).

Not a test and never run by CI. Everything it installs or writes goes to a scratch folder outside the
repository; the only file it may write into the repository is the screenshot, and only when asked
(--screenshot docs/panel-comfyui.png).

    COMFYUI_PATH=/work/scratch/ComfyUI HEADROOM_CHECK_DIR=/work/scratch/fecheck \
        .venv/bin/python scripts/frontend_check.py [--screenshot docs/panel-comfyui.png]

Steps: (1) a venv for ComfyUI in the scratch folder with torch==2.13.0 (pinned; the CPU wheel on this
machine), ComfyUI's requirements from PyPI as far as they go beside that torch, a torchvision stand-in,
and comfyui-frontend-package; (2) ComfyUI on 127.0.0.1 --cpu with the pack linked in through
--extra-model-paths-config, served with --front-end-root <package>/static; (3) headless Chromium driven by
playwright: load a workflow, open the Headroom tab, apply a preset and undo it, queue it (queue-time
warning) and run a node that raises a real OOM text (OOM toast). Writes report.json, server.log and
screenshots to <scratch>/out and stops the server at the end.

Needs: python3 (3.11) for ComfyUI's venv, the Python playwright package in the interpreter that runs this
script (the pack's .venv has it), and a Chromium (Debian's /usr/bin/chromium; never `playwright install`).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PACK_DIR = Path(__file__).resolve().parent.parent
# The frontends the check is run with, pinned: the newest on PyPI, and the one the ComfyUI this check runs
# asks for (0.3.64's requirements.txt: comfyui-frontend-package==1.27.10), the frontend a user of that
# ComfyUI actually gets. --frontend takes a name here or any version.
FRONTENDS = {"newest": "1.58.1", "comfyui-0.3.64": "1.27.10"}
DEFAULT_FRONTEND = "newest"
TORCH_PIN = "torch==2.13.0"
# ComfyUI requirements that cannot be installed beside the pinned CPU torch, or are not needed here.
SKIP_REQUIREMENTS = {"torch", "torchvision", "torchaudio", "kornia", "spandrel",
                     "comfyui-frontend-package", "comfyui-workflow-templates", "comfyui-embedded-docs"}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

TORCHVISION_STANDIN = '''"""Stand-in for torchvision, written by Headroom's scripts/frontend_check.py. PyPI's torchvision builds
do not match the pinned torch 2.13.0+cpu; ComfyUI imports torchvision at start-up (comfy/ldm/cascade) but
uses it only in models this check never loads. Any real use raises."""
import sys
import types

__version__ = "0.0.0+standin"


class _Missing:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"torchvision stand-in: {self._name} is not available")


def _module(name):
    mod = types.ModuleType(name)

    def _get(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{name}.{attr}")

    mod.__getattr__ = _get
    sys.modules[name] = mod
    return mod


transforms = _module("torchvision.transforms")
transforms.functional = _module("torchvision.transforms.functional")
models = _module("torchvision.models")
ops = _module("torchvision.ops")
io = _module("torchvision.io")
utils = _module("torchvision.utils")


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Missing(f"torchvision.{attr}")
'''

OOM_NODE = '''"""Scratch node of Headroom's frontend check: raises torch.OutOfMemoryError with the given text, so ComfyUI
sends a real execution_error for it (with its own OOM tips appended, as on a real run)."""
import torch


class HeadroomCheckRaiseOOM:
    CATEGORY = "headroom_check"
    RETURN_TYPES = ()
    FUNCTION = "run"
    OUTPUT_NODE = True

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"text": ("STRING", {"multiline": True, "default": "CUDA out of memory."})}}

    @classmethod
    def IS_CHANGED(cls, text):
        return float("nan")

    def run(self, text):
        raise torch.OutOfMemoryError(text)


NODE_CLASS_MAPPINGS = {"HeadroomCheckRaiseOOM": HeadroomCheckRaiseOOM}
'''


def log(msg):
    print(f"[frontend-check] {msg}", flush=True)


def run(cmd, **kw):
    log("$ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kw)


# ---------------------------------------------------------------------------------------------- setup

def requirement_name(line):
    for sep in "<>=~!;[ ":
        line = line.split(sep, 1)[0]
    return line.strip().lower()


def setup(comfy: Path, scratch: Path, python: str, frontend: str):
    venv = scratch / "comfy-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        run([python, "-m", "venv", venv])
    constraints = scratch / "constraints.txt"
    constraints.write_text(TORCH_PIN + "\n")
    pip = [py, "-m", "pip", "install", "-q", "-c", constraints]
    run(pip + [TORCH_PIN])
    reqs = []
    for line in (comfy / "requirements.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and requirement_name(line) not in SKIP_REQUIREMENTS:
            reqs.append(line)
    # requests: imported by app/frontend_management.py but not listed in 0.3.64's requirements.
    run(pip + reqs + ["requests", f"comfyui-frontend-package=={frontend}"])
    standins = scratch / "standins" / "torchvision"
    standins.mkdir(parents=True, exist_ok=True)
    (standins / "__init__.py").write_text(TORCHVISION_STANDIN)
    base = scratch / "base"
    # user/default/{workflows,subgraphs}: without them 0.3.64 answers the frontend's listings with 404.
    for sub in ("custom_nodes", "models", "input", "output", "temp", "user/default/workflows", "user/default/subgraphs"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    nodes_dir = scratch / "nodes_dir"
    nodes_dir.mkdir(exist_ok=True)
    link = nodes_dir / "headroom"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(PACK_DIR)
    (nodes_dir / "headroom_check_oom").mkdir(exist_ok=True)
    (nodes_dir / "headroom_check_oom" / "__init__.py").write_text(OOM_NODE)
    (scratch / "extra_paths.yaml").write_text(f"headroom_check:\n  custom_nodes: {nodes_dir}\n")


def frontend_root(scratch: Path) -> Path:
    py = scratch / "comfy-venv" / "bin" / "python"
    out = subprocess.run([py, "-c", "import comfyui_frontend_package, os;"
                          "print(os.path.join(os.path.dirname(comfyui_frontend_package.__file__), 'static'))"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


# ---------------------------------------------------------------------------------------------- server

def start_server(comfy: Path, scratch: Path, port: int, web_root: Path | None = None):
    out = scratch / "out"
    out.mkdir(exist_ok=True)
    logfile = open(out / "server.log", "w")
    base = scratch / "base"
    env = dict(os.environ, PYTHONPATH=str(scratch / "standins"))
    cmd = [scratch / "comfy-venv" / "bin" / "python", "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(port),
           "--disable-auto-launch", "--disable-api-nodes", "--base-directory", base,
           "--database-url", f"sqlite:///{base / 'user' / 'comfyui.db'}",
           "--extra-model-paths-config", scratch / "extra_paths.yaml", "--front-end-root", web_root or frontend_root(scratch)]
    log("$ " + " ".join(str(c) for c in cmd))
    proc = subprocess.Popen([str(c) for c in cmd], cwd=comfy, env=env, stdout=logfile, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(180):
        if proc.poll() is not None:
            raise SystemExit(f"ComfyUI exited ({proc.returncode}); see {out / 'server.log'}")
        try:
            urllib.request.urlopen(url + "/system_stats", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(1)
    stop_server(proc)
    raise SystemExit("ComfyUI did not answer within 180 s")


def stop_server(proc):
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def check_backend(url, logtext):
    info = json.load(urllib.request.urlopen(url + "/object_info", timeout=60))
    ours = {k: v.get("category") for k, v in info.items() if str(v.get("category", "")).startswith("Headroom")}
    stats = json.load(urllib.request.urlopen(url + "/system_stats", timeout=10))
    failed = [line.strip() for line in logtext.splitlines() if "IMPORT FAILED" in line]
    return {"object_info_nodes": len(info), "headroom_nodes": ours, "system": stats.get("system", {}),
            "import_failed": failed, "pack_import_failed": any("headroom" in f and "check" not in f for f in failed)}


# ---------------------------------------------------------------------------------------------- browser

# Records console warnings/errors with a stack, so deprecation warnings can be told apart by caller.
INIT_SCRIPT = r"""
(() => {
  window.__hr = { console: [], events: [] };
  for (const level of ["warn", "error"]) {
    const orig = console[level].bind(console);
    console[level] = (...args) => {
      try {
        const text = args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : (() => { try { return JSON.stringify(a); } catch { return String(a); } })())).join(" ");
        const stack = (new Error().stack || "").split("\n").slice(2, 9).join("\n");
        window.__hr.console.push({ level, text: text.slice(0, 600), headroom: /\/extensions\/headroom\//.test(stack), stack });
      } catch {}
      orig(...args);
    };
  }
})();
"""

FEATURES_JS = r"""() => {
  const em = app.extensionManager;
  const has = (o, k) => !!o && typeof o[k] === "function";
  return {
    frontend_version: window.__COMFYUI_FRONTEND_VERSION__ ?? null,
    app_rootGraph: !!app.rootGraph, app_graph: !!app.graph,
    em_registerSidebarTab: has(em, "registerSidebarTab"),
    em_sidebarTab_registerSidebarTab: has(em?.sidebarTab, "registerSidebarTab"),
    em_toast_add: has(em?.toast, "add"),
    em_toast_methods: em?.toast ? Object.keys(em.toast) : [],
    em_setting_get: has(em?.setting, "get"), em_setting_set: has(em?.setting, "set"),
    em_dialog: !!em?.dialog, em_command_execute: has(em?.command, "execute"),
    em_registerBottomPanelTab: has(em, "registerBottomPanelTab"),
    app_ui_settings_getSettingValue: has(app.ui?.settings, "getSettingValue"),
    api_addEventListener: has(window.comfyAPI?.api?.api, "addEventListener"),
    api_clientId: window.comfyAPI?.api?.api?.clientId ?? null,
    headroom_extension_registered: (app.extensions ?? []).some((e) => e.name === "headroom.panel"),
    headroom_sidebar_tab: (em?.sidebarTab?.sidebarTabs ?? em?.getSidebarTabs?.() ?? []).some((t) => t.id === "headroom"),
  };
}"""

# The widgets of every node, to compare the graph before/after a preset and its undo.
WIDGETS_JS = r"""() => {
  const g = app.rootGraph ?? app.graph;
  const out = {};
  for (const n of g.nodes) out[n.id] = (n.widgets ?? []).map((w) => [w.name, w.value]);
  return out;
}"""


def diff_widgets(before, after):
    changes = []
    for node_id, widgets in after.items():
        old = dict((w[0], w[1]) for w in before.get(node_id, []))
        for name, value in widgets:
            if old.get(name) != value:
                changes.append({"node": node_id, "widget": name, "from": old.get(name), "to": value})
    return changes


def find_toasts(page, pattern):
    """Texts of visible toasts (the frontend's own and Headroom's) matching a regex."""
    return page.evaluate(r"""(src) => {
      const re = new RegExp(src, "i");
      const sel = "[data-sonner-toast], .p-toast-message, [role=status], [role=alert], .headroom-toast, li[data-type]";
      const texts = [...document.querySelectorAll(sel)].map((e) => e.innerText.trim()).filter((t) => re.test(t));
      return texts.filter((t, i) => !texts.some((o, j) => j !== i && o.length > t.length && o.includes(t))
                                   && texts.indexOf(t) === i);
    }""", pattern)


def wait_toast(page, pattern, timeout_s=30):
    end = time.time() + timeout_s
    while time.time() < end:
        found = find_toasts(page, pattern)
        if found:
            return found
        page.wait_for_timeout(500)
    return []


def browse(url, scratch: Path, workflow: Path, screenshot: Path | None, chromium: str, oom_text: str, budget: str):
    """Drives the live frontend through every Headroom surface, one step after the other; the report holds
    what each step saw."""
    from playwright.sync_api import sync_playwright

    out = scratch / "out"
    report = {"steps": {}, "http_errors": [], "failed_requests": [], "page_errors": []}
    steps = report["steps"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        report["chromium"] = browser.version
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        panel_posts = watch_page(page, url, report)
        open_frontend(page, url, report)
        set_settings(page, url, steps, budget)
        load_workflow(page, steps, workflow)
        open_panel(page, steps, out, screenshot)
        apply_and_undo_preset(page, steps, out)
        queue_warning(page, steps, out)
        oom_toast(page, steps, out, oom_text)
        close_tab(page, steps, panel_posts)
        report["console"] = page.evaluate("() => window.__hr.console")
        browser.close()
    return report


def watch_page(page, url, report):
    """Records the page's errors, failed requests and HTTP errors in the report; returns the list that
    collects the bodies posted to /headroom/panel."""
    page.add_init_script(INIT_SCRIPT)
    page.on("pageerror", lambda e: report["page_errors"].append(str(e)[:500]))
    page.on("requestfailed", lambda r: report["failed_requests"].append(f"{r.failure} {r.url[:120]}"))
    panel_posts = []
    page.on("request", lambda r: panel_posts.append(r.post_data) if r.url.endswith("/headroom/panel") else None)
    page.on("response", lambda r: report["http_errors"].append(f"{r.status} {r.request.method} {r.url.replace(url, '')}")
            if r.status >= 400 else None)
    return panel_posts


def open_frontend(page, url, report):
    """The frontend loaded with Headroom's extension registered, its features noted, its events recorded."""
    page.goto(url + "/")
    page.wait_for_function("window.app && (window.app.rootGraph || window.app.graph) && window.app.extensionManager",
                           timeout=180_000)
    page.wait_for_function("(window.app.extensions ?? []).some((e) => e.name === 'headroom.panel')", timeout=60_000)
    page.wait_for_timeout(3000)
    report["features"] = page.evaluate(FEATURES_JS)
    page.evaluate("""() => window.comfyAPI.api.api.addEventListener("headroom.preflight",
                     (e) => window.__hr.events.push({type: "headroom.preflight", detail: e.detail}))""")
    page.evaluate("""() => window.comfyAPI.api.api.addEventListener("execution_error",
                     (e) => window.__hr.events.push({type: "execution_error", detail: e.detail}))""")


def set_settings(page, url, steps, budget):
    """Settings: a budget of BUDGET_GB (this machine has no GPU) and the queue action "warn"; their onChange
    pushes them to the server."""
    steps["settings"] = page.evaluate("""async (budget) => {
      const s = app.extensionManager.setting;
      await s.set("Headroom.Budget", budget);
      await s.set("Headroom.QueueAction", "warn");
      return { budget: s.get("Headroom.Budget"), queue_action: s.get("Headroom.QueueAction"),
               refresh: s.get("Headroom.RefreshSeconds"),
               declared: ["Headroom.Budget", "Headroom.QueueAction", "Headroom.RefreshSeconds"]
                 .filter((id) => (s.settings ?? app.ui?.settings?.settingsLookup)?.[id] !== undefined) };
    }""", budget)
    req = urllib.request.Request(url + "/headroom/settings", data=b"{}", headers={"Content-Type": "application/json"})
    steps["settings"]["server"] = json.load(urllib.request.urlopen(req, timeout=10))


def load_workflow(page, steps, workflow):
    """The workflow loaded into the graph, as the user's Load would."""
    data = json.loads(workflow.read_text())
    page.evaluate("async (wf) => { await app.loadGraphData(wf); }", data)
    page.wait_for_timeout(1500)
    steps["workflow"] = {"file": workflow.name, "nodes": page.evaluate("() => (app.rootGraph ?? app.graph).nodes.length")}


def open_panel(page, steps, out, screenshot):
    """The Headroom sidebar tab: its button, else the frontend's toggle command."""
    button = page.locator(".headroom-tab-button")
    how = "button .headroom-tab-button"
    if button.count():
        # Frontend 1.4.13 opens a missing-models dialog over the page: close it first.
        page.keyboard.press("Escape")
        page.wait_for_timeout(500)
        button.first.click(force=True)
    else:
        how = "command Workspace.ToggleSidebarTab.headroom"
        page.evaluate("() => app.extensionManager.command.execute('Workspace.ToggleSidebarTab.headroom')")
    # The first load after the setup, on a loaded machine, took more than 20 s with frontend 1.27.10.
    page.wait_for_selector(".headroom-panel", timeout=60_000)
    try:
        page.wait_for_selector(".headroom-panel .headroom-stages tr", timeout=60_000)
        page.wait_for_function("document.querySelectorAll('.headroom-preset').length > 0 && "
                               "[...document.querySelectorAll('.headroom-preset-label')].some((e) => e.textContent.includes('→'))",
                               timeout=60_000)
    except Exception as e:  # record what the panel shows instead
        steps["panel_wait_error"] = str(e).splitlines()[0]
    page.wait_for_timeout(1500)
    steps["panel"] = page.evaluate(r"""() => {
      const q = (s) => document.querySelector(s);
      const all = (s) => [...document.querySelectorAll(s)];
      return {
        device: q(".headroom-device")?.textContent, legend: q(".headroom-legend")?.innerText,
        stages: all(".headroom-stages tr").map((r) => r.innerText.replace(/\s+/g, " ").trim()),
        verdict: q(".headroom-verdict")?.textContent,
        presets: all(".headroom-preset-label").map((e) => e.textContent),
        error: q(".headroom-error")?.textContent || null,
      };
    }""")
    steps["panel"]["opened_by"] = how
    page.screenshot(path=str(out / "panel-full.png"))
    shot_path = out / "panel-comfyui.png"
    page.screenshot(path=str(shot_path), clip={"x": 0, "y": 0, "width": 1000, "height": 560})
    if screenshot:
        shutil.copyfile(shot_path, screenshot)
        log(f"screenshot written to {screenshot}")


def apply_and_undo_preset(page, steps, out):
    """Preset and undo: the first preset whose preview changes the peak (else the first one)."""
    before = page.evaluate(WIDGETS_JS)
    name = page.evaluate(r"""() => {
      const rows = [...document.querySelectorAll(".headroom-preset")];
      const changes = (r) => { const m = r.innerText.match(/([\d.]+) GiB → ([\d.]+) GiB/); return m && m[1] !== m[2]; };
      return (rows.find(changes) ?? rows[0])?.dataset.preset ?? null;
    }""")
    preset = page.locator(f'.headroom-preset[data-preset="{name}"]')
    if name:
        preset.locator("button.headroom-apply").click()
        try:
            page.wait_for_selector(".headroom-undo", timeout=30_000)
        except Exception:
            pass
        applied = page.evaluate(WIDGETS_JS)
        undo_label = page.locator(".headroom-undo").text_content() if page.locator(".headroom-undo").count() else None
        page.screenshot(path=str(out / "preset-applied.png"))
        if undo_label:
            page.locator(".headroom-undo").click()
            page.wait_for_timeout(1000)
        undone = page.evaluate(WIDGETS_JS)
        steps["preset"] = {"preset": name, "changes": diff_widgets(before, applied), "undo_button": undo_label,
                           "after_undo_differs": diff_widgets(before, undone),
                           "undo_button_after": page.locator(".headroom-undo").count()}
    else:
        steps["preset"] = {"error": "no preset row in the panel"}


def queue_warning(page, steps, out):
    """Queue-time warning: queue the workflow as the user would (the Run button's app.queuePrompt).
    The models are missing, so ComfyUI refuses the prompt after Headroom's on-prompt check has run."""
    n_events = len(page.evaluate("() => window.__hr.events"))
    queued = page.evaluate("""async () => { try { const r = await app.queuePrompt(0, 1); return {ok: true, result: r ?? null}; }
                               catch (e) { return {ok: false, error: String(e)}; } }""")
    # The extension's summaries: "This run: <verdict>" (will not complete), "Runs: <verdict>" (streams
    # or tight), "Headroom ..." (applied, blocked, could not check).
    toasts = wait_toast(page, "This run|Runs:|not fit|Headroom", 30)
    page.wait_for_timeout(1000)
    page.screenshot(path=str(out / "queue-warning.png"))
    events = page.evaluate("() => window.__hr.events")[n_events:]
    steps["queue_warning"] = {"queue_prompt": queued, "toasts": toasts,
                              "preflight_events": [e["detail"] for e in events if e["type"] == "headroom.preflight"]}
    for e in steps["queue_warning"]["preflight_events"]:
        e.pop("report", None)
    page.evaluate("() => { app.extensionManager.toast?.dismissAll?.(); app.extensionManager.toast?.removeAll?.(); }")
    page.keyboard.press("Escape")


def oom_toast(page, steps, out, oom_text):
    """OOM toast: a prompt with the scratch node that raises a real OOM text, sent to this client."""
    n_events = len(page.evaluate("() => window.__hr.events"))
    steps["oom"] = page.evaluate("""async (text) => {
      const api = window.comfyAPI.api.api;
      const prompt = { "1": { class_type: "HeadroomCheckRaiseOOM", inputs: { text } } };
      const res = await api.fetchApi("/prompt", { method: "POST", headers: { "Content-Type": "application/json" },
                                      body: JSON.stringify({ prompt, client_id: api.clientId }) });
      return { status: res.status };
    }""", oom_text)
    try:
        page.wait_for_selector(".headroom-toast", timeout=60_000)
        page.wait_for_timeout(1500)
        steps["oom"]["toast"] = page.locator(".headroom-toast").inner_text()
        steps["oom"]["apply_button"] = page.locator(".headroom-toast .headroom-apply-fix").count() > 0
    except Exception as e:
        steps["oom"]["toast_error"] = str(e).splitlines()[0]
    steps["oom"]["frontend_dialogs"] = page.evaluate(
        "() => [...document.querySelectorAll('[role=dialog]')].map((e) => e.innerText.slice(0, 300))")
    page.screenshot(path=str(out / "oom-toast.png"))
    if steps["oom"].get("apply_button"):
        before = page.evaluate(WIDGETS_JS)
        page.locator(".headroom-toast .headroom-apply-fix").click()
        try:
            page.wait_for_selector(".headroom-toast", state="detached", timeout=30_000)
        except Exception:
            steps["oom"]["after_apply_toast"] = page.locator(".headroom-toast").inner_text()
        steps["oom"]["apply_changes"] = diff_widgets(before, page.evaluate(WIDGETS_JS))
        steps["oom"]["panel_undo_after_apply"] = (page.locator(".headroom-undo").text_content()
                                                  if page.locator(".headroom-undo").count() else None)
    events = page.evaluate("() => window.__hr.events")[n_events:]
    steps["oom"]["execution_error"] = [{k: e["detail"].get(k) for k in ("exception_type", "exception_message", "node_type")}
                                       for e in events if e["type"] == "execution_error"]


def close_tab(page, steps, panel_posts):
    """Closing the tab: the frontend should call the tab's destroy(), which tells the server to stop pushing."""
    page.locator(".headroom-toast .headroom-dismiss").click() if page.locator(".headroom-toast").count() else None
    n_posts = len(panel_posts)
    page.evaluate("() => app.extensionManager.command.execute('Workspace.ToggleSidebarTab.headroom')")
    page.wait_for_timeout(3000)
    steps["close_tab"] = {"panel_in_page": page.locator(".headroom-panel").count(),
                          "panel_posts_after_close": panel_posts[n_posts:], "all_panel_posts": panel_posts}


def summarize(report):
    seen, lines = set(), []
    for c in report.get("console", []):
        key = (c["level"], c["text"][:120], c["headroom"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"  [{c['level']}{' HEADROOM' if c['headroom'] else ''}] {c['text'][:200]}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfyui", default=os.environ.get("COMFYUI_PATH"), help="ComfyUI checkout (or $COMFYUI_PATH)")
    ap.add_argument("--scratch", default=os.environ.get("HEADROOM_CHECK_DIR"), help="scratch folder (or $HEADROOM_CHECK_DIR)")
    ap.add_argument("--python", default="python3", help="interpreter for ComfyUI's venv")
    ap.add_argument("--frontend", default=DEFAULT_FRONTEND,
                    help=f"comfyui-frontend-package version, or one of {', '.join(f'{k} ({v})' for k, v in FRONTENDS.items())}")
    ap.add_argument("--port", type=int, default=8188)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--workflow", default=str(PACK_DIR / "workflows" / "wan2.2_ti2v_5b.json"))
    ap.add_argument("--oom-example", default="oom-001", help="id in the OOM examples file")
    ap.add_argument("--oom-examples", default=os.environ.get("HEADROOM_OOM_EXAMPLES", "/work/shared/facts/oom-examples.json"))
    ap.add_argument("--budget", default="4", help="Headroom.Budget to set (GB or a GPU name); 4 puts the Wan 5B workflow over")
    ap.add_argument("--screenshot", help="also copy the panel screenshot here (e.g. docs/panel-comfyui.png)")
    ap.add_argument("--front-end-root", help="serve this built frontend instead of the package's (e.g. 1.4.13's web/)")
    ap.add_argument("--skip-setup", action="store_true", help="reuse the scratch venv as it is")
    ap.add_argument("--url", help="use a ComfyUI already running there (no setup, no server start)")
    args = ap.parse_args()
    if os.environ.get("CI"):
        raise SystemExit("frontend_check.py is a manual check and does not run in CI")
    if not args.url and not (args.comfyui and args.scratch):
        ap.error("give --comfyui/$COMFYUI_PATH and --scratch/$HEADROOM_CHECK_DIR (or --url)")
    scratch = Path(args.scratch or "/tmp/headroom-frontend-check").resolve()
    if scratch == PACK_DIR or PACK_DIR in scratch.parents:
        raise SystemExit("the scratch folder must be outside the repository")
    (scratch / "out").mkdir(parents=True, exist_ok=True)
    oom_text = "torch.OutOfMemoryError: CUDA out of memory."
    try:
        examples = json.loads(Path(args.oom_examples).read_text())
        oom_text = next(e["text"] for e in examples if e["id"] == args.oom_example)
    except (OSError, StopIteration, ValueError):
        log(f"OOM example {args.oom_example} not found; using a short OOM text")
    # The node raises torch.OutOfMemoryError(message): ComfyUI reports the type itself.
    oom_message = oom_text.split(": ", 1)[1] if oom_text.startswith("torch.OutOfMemoryError: ") else oom_text

    proc = None
    try:
        if args.url:
            url = args.url.rstrip("/")
            report_backend = {}
        else:
            comfy = Path(args.comfyui).resolve()
            if not args.skip_setup:
                setup(comfy, scratch, args.python, FRONTENDS.get(args.frontend, args.frontend))
            proc, url = start_server(comfy, scratch, args.port,
                                     Path(args.front_end_root).resolve() if args.front_end_root else None)
            time.sleep(2)
            report_backend = check_backend(url, (scratch / "out" / "server.log").read_text())
            log(f"backend: {json.dumps(report_backend)[:600]}")
            if not report_backend["headroom_nodes"] or report_backend["pack_import_failed"]:
                raise SystemExit("the pack did not load; see out/server.log")
        shot = Path(args.screenshot).resolve() if args.screenshot else None
        report = browse(url, scratch, Path(args.workflow), shot, args.chromium, oom_message, args.budget)
        report["backend"] = report_backend
    finally:
        stop_server(proc)
    (scratch / "out" / "report.json").write_text(json.dumps(report, indent=1))
    log(f"report: {scratch / 'out' / 'report.json'}")
    print(json.dumps({k: v for k, v in report.items() if k not in ("console",)}, indent=1)[:12000])
    print("console warnings/errors (deduplicated):\n" + summarize(report))


if __name__ == "__main__":
    main()
