// The web panel's logic in headless Chromium, on a page that loads web/*.js with a graph built from the
// real templates in ../shared/real-workflows (and the pack's own example workflows).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { launch } from "./harness/browser.mjs";
import { WIDGETS } from "./harness/fake_comfy.js";
import { mock, SNAPSHOT } from "./harness/mock_routes.mjs";
import { REPO, SHARED, startServer } from "./harness/server.mjs";

let browser;
let server;

before(async () => {
  server = await startServer(mock);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function openPanel(template, flavour = "modern") {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(server.url);
  await page.evaluate(async ({ template, flavour }) => {
    const { makeComfy } = await import("/harness/fake_comfy.js");
    const workflow = await (await fetch(template)).json();
    const recorded = (await (await fetch("/fixtures/recorded-graphs.json")).json()).graphs[template.slice(1)];
    if (!recorded) throw new Error(`no recording of ${template}`);
    window.__comfy = makeComfy(workflow, flavour, { "Headroom.Budget": "auto", "Headroom.QueueAction": "warn" }, recorded);
    await import("/extensions/headroom/headroom.js");
    await window.__comfy.extensions[0].setup();
    window.__comfy.tabs[0].render(document.getElementById("sidebar"));
  }, { template, flavour });
  await page.waitForFunction(() => document.querySelectorAll(".headroom-preset").length === 3
    && document.querySelector(".headroom-preset-label")?.textContent.includes("→"));
  return { page, errors };
}

test("the harness's widget-name table agrees with the recorded real frontend", () => {
  const recorded = JSON.parse(readFileSync(new URL("./fixtures/recorded-graphs.json", import.meta.url), "utf8"));
  let checked = 0;
  for (const nodes of Object.values(recorded.graphs)) {
    for (const node of nodes) {
      if (!WIDGETS[node.type]) continue;
      assert.deepEqual(node.widgets.map((w) => w.name), WIDGETS[node.type].slice(0, node.widgets.length), node.type);
      checked += 1;
    }
  }
  assert.ok(checked > 30, `only ${checked} nodes checked`);
});

const widget = (page, id, name) => page.evaluate(([id, name]) => window.__comfy.graph.widget(id, name), [id, name]);

function templateNode(file, type) {
  const wf = JSON.parse(readFileSync(join(SHARED, "real-workflows", file), "utf8"));
  return wf.nodes.find((n) => n.type === type && n.mode !== 4);
}

test("bar and stage table render from the routes", async () => {
  const { page, errors } = await openPanel("/templates/text_to_video_wan.json");
  assert.equal(await page.textContent(".headroom-device"), SNAPSHOT.device);
  const free = await page.$eval(".headroom-seg.free", (el) => parseFloat(el.style.width));
  assert.ok(Math.abs(free - (SNAPSHOT.free_bytes / SNAPSHOT.total_bytes) * 100) < 0.01);
  const other = await page.$eval(".headroom-seg.other", (el) => el.title);
  assert.match(other, /other processes: 1\.1 GiB/);
  const stages = await page.$$eval(".headroom-stages tr", (rows) => rows.map((r) => r.dataset.stage));
  assert.deepEqual(stages, ["text_encode", "sample", "decode"]);
  assert.match(await page.textContent(".headroom-verdict"), /Peak 27\.3 GiB in decode — does not fit \(21\.7 GiB\)/);
  // A websocket reading replaces the bar.
  await page.evaluate((s) => window.__comfy.api.emit("headroom.vram", { ...s, device: "pushed reading" }), SNAPSHOT);
  assert.equal(await page.textContent(".headroom-device"), "pushed reading");
  const panelPost = server.requests.find((r) => r.route === "/headroom/panel");
  assert.deepEqual(panelPost.body, { open: true, client_id: "test-client" });
  // Loading another workflow re-estimates it.
  const before = server.requests.filter((r) => r.route === "/headroom/estimate").length;
  await page.evaluate(() => window.__comfy.extensions[0].afterConfigureGraph());
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(server.requests.filter((r) => r.route === "/headroom/estimate").length > before);
  assert.deepEqual(errors, []);
  await page.close();
});

for (const flavour of ["modern", "v1.4"]) {
  test(`presets rewrite the right widgets and undo restores them (${flavour} frontend)`, async () => {
    const { page, errors } = await openPanel("/templates/text_to_video_wan.json", flavour);
    const unet = templateNode("text_to_video_wan.json", "UNETLoader");
    const latent = templateNode("text_to_video_wan.json", "EmptyHunyuanLatentVideo");
    assert.equal(await widget(page, unet.id, "weight_dtype"), "default");
    assert.equal(await widget(page, latent.id, "length"), 33);
    const label = await page.textContent('.headroom-preset[data-preset="fp8-weights"] .headroom-preset-label');
    assert.equal(label, "fp8 weights: 27.3 GiB → 21.0 GiB");

    await page.click('.headroom-preset[data-preset="fp8-weights"] button');
    await page.waitForSelector(".headroom-undo");
    assert.equal(await widget(page, unet.id, "weight_dtype"), "fp8_e4m3fn");
    assert.equal(await widget(page, latent.id, "length"), 33);
    // The server saw the whole recorded graph, not a summary.
    const sent = server.requests.filter((r) => r.route === "/headroom/apply-preset").at(-1);
    assert.equal(sent.body.workflow.nodes.length, JSON.parse(readFileSync(join(SHARED, "real-workflows", "text_to_video_wan.json"))).nodes.length);

    // Choosing another preset first returns to the user's graph.
    await page.click('.headroom-preset[data-preset="half-frames"] button');
    await page.waitForFunction(() => document.querySelector(".headroom-undo")?.textContent === "Undo half-frames");
    assert.equal(await widget(page, unet.id, "weight_dtype"), "default");
    assert.equal(await widget(page, latent.id, "length"), 17);

    await page.click(".headroom-undo");
    await page.waitForFunction(() => !document.querySelector(".headroom-undo"));
    assert.equal(await widget(page, latent.id, "length"), 33);
    assert.equal(await widget(page, unet.id, "weight_dtype"), "default");
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test("OOM toast appears for a recorded error and its button applies the fix", async () => {
  const { page, errors } = await openPanel("/workflows/wan2.2_ti2v_5b.json");
  const oom = JSON.parse(readFileSync(join(SHARED, "facts", "oom-examples.json"), "utf8"))[0];
  const [type, ...rest] = oom.text.split(": ");
  // A non-OOM failure is left alone.
  await page.evaluate(() => window.__comfy.api.emit("execution_error", { exception_type: "ValueError", exception_message: "bad input" }));
  await page.waitForTimeout(200);
  assert.equal(await page.$(".headroom-toast"), null);
  const explainsBefore = server.requests.filter((r) => r.route === "/headroom/explain").length;

  await page.evaluate(([t, m]) => window.__comfy.api.emit("execution_error", { exception_type: t, exception_message: m }),
    [type, rest.join(": ")]);
  await page.waitForSelector(".headroom-toast");
  const explains = server.requests.filter((r) => r.route === "/headroom/explain");
  assert.equal(explains.length, explainsBefore + 1);
  assert.equal(explains.at(-1).body.text, oom.text);
  assert.match(await page.textContent(".headroom-diagnosis"), /100\.0 MiB more was requested/);
  // No preset named by the diagnosis: the first preset that makes this graph fit (fp8 weights, 21.0 GiB).
  assert.equal(await page.textContent(".headroom-apply-fix"), "Apply: fp8 weights");
  const unet = JSON.parse(readFileSync(join(REPO, "workflows", "wan2.2_ti2v_5b.json"))).nodes.find((n) => n.type === "UNETLoader");
  await page.click(".headroom-apply-fix");
  await page.waitForFunction(() => !document.querySelector(".headroom-toast"));
  assert.equal(await widget(page, unet.id, "weight_dtype"), "fp8_e4m3fn");
  assert.deepEqual(errors, []);
  await page.close();
});

test("the OOM fix prefers the catalog's fit-this-card preset when it fits", async () => {
  const { page } = await openPanel("/templates/flux_schnell.json");
  const chosen = await page.evaluate(async () => {
    const { suggestedFix } = await import("/extensions/headroom/headroom_oom.js");
    const after = { "fit 24 GB": { peak_bytes: 5, verdict: "fits" }, "fit this card": { peak_bytes: 9, verdict: "tight" } };
    const client = {
      presets: async () => ({ presets: [{ name: "fit 24 GB" }, { name: "fit this card", target: "request" }] }),
      applyPreset: async (wf, name) => ({ after: after[name], changes: [{ node_id: 1, widget: "w", to: 1 }] }),
    };
    return suggestedFix({ app: window.__comfy.app, client, result: { fixes: [] }, getBudget: () => "auto" });
  });
  assert.deepEqual(chosen, { preset: "fit this card", text: "fit this card" });
  await page.close();
});

test("queue-time warning becomes a toast; settings are declared and mirrored to the server", async () => {
  const { page } = await openPanel("/templates/flux_schnell.json");
  await page.evaluate(() => window.__comfy.api.emit("headroom.preflight", {
    over_budget: true, peak_bytes: 14 * 1024 ** 3, peak_stage: "sample", budget_bytes: 11 * 1024 ** 3,
    fix: "weight_dtype fp8_e4m3fn" }));
  const toasts = await page.evaluate(() => window.__comfy.toasts);
  assert.equal(toasts.length, 1);
  assert.equal(toasts[0].severity, "warn");
  assert.match(toasts[0].detail, /peak 14\.0 GiB in sample over 11\.0 GiB\. Fix: weight_dtype fp8_e4m3fn/);
  await page.evaluate(() => window.__comfy.api.emit("headroom.preflight", { action: "warn", verdict: "fits", over_budget: false }));
  assert.equal((await page.evaluate(() => window.__comfy.toasts)).length, 1);  // a fit says nothing
  // A preflight that could not run is told once, not on every queue.
  for (let i = 0; i < 2; i++) await page.evaluate(() => window.__comfy.api.emit("headroom.preflight", { error: "plan: unsupported node X" }));
  assert.equal((await page.evaluate(() => window.__comfy.toasts)).length, 2);
  const ids = await page.evaluate(() => window.__comfy.extensions[0].settings.map((s) => s.id));
  assert.deepEqual(ids, ["Headroom.Budget", "Headroom.QueueAction", "Headroom.RefreshSeconds"]);
  await page.evaluate(() => window.__comfy.extensions[0].settings[1].onChange("block"));
  const posted = server.requests.filter((r) => r.route === "/headroom/settings");
  assert.deepEqual(posted[0].body, { budget: "auto", queue_action: "warn", refresh_s: 1 });
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(server.requests.filter((r) => r.route === "/headroom/settings").at(-1).body, { queue_action: "block" });
  await page.close();
});

test("changes addressed into a subgraph reach the inner node", async () => {
  const { page } = await openPanel("/templates/flux_schnell.json");
  const result = await page.evaluate(async () => {
    const { applyChanges, undoChanges } = await import("/extensions/headroom/headroom_graph.js");
    const inner = { id: 122, widgets: [{ name: "weight_dtype", value: "default" }] };
    const host = { id: 130, widgets: [], subgraph: { getNodeById: (id) => (id === 122 ? inner : null) } };
    const app = { graph: { getNodeById: (id) => (id === 130 ? host : null) } };
    const record = applyChanges(app, [{ node_id: "130:122", widget: "weight_dtype", to: "fp8_e4m3fn" },
      { node_id: "130:999", widget: "weight_dtype", to: "x" }]);
    const applied = inner.widgets[0].value;
    undoChanges(app, record);
    return { applied, restored: inner.widgets[0].value, recorded: record.length };
  });
  assert.deepEqual(result, { applied: "fp8_e4m3fn", restored: "default", recorded: 1 });
  await page.close();
});

test("node report shows in a DOM widget after execution", async () => {
  const { page } = await openPanel("/templates/flux_schnell.json");
  const text = await page.evaluate(async () => {
    const ext = window.__comfy.extensions[0];
    function NodeType() {}
    NodeType.prototype.addDOMWidget = function (name, type, el) { this.el = el; document.body.appendChild(el); return { element: el }; };
    await ext.beforeRegisterNodeDef(NodeType, { name: "HeadroomPreflight" });
    const node = new NodeType();
    node.onExecuted({ text: ["stage  peak\nsample 20.00 GiB\nVerdict: FITS"] });
    return node.el.textContent;
  });
  assert.match(text, /Verdict: FITS/);
  await page.close();
});

// Always written to tests/web/artifacts/ (ignored by git); HEADROOM_UPDATE_SCREENSHOT=1 also refreshes
// docs/panel.png, the README's picture, so a plain test run leaves the tree clean.
test("screenshot of the panel for the README", async () => {
  const { page } = await openPanel("/workflows/wan2.2_ti2v_5b.json");
  const dir = join(REPO, "tests", "web", "artifacts");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "panel.png");
  await page.locator("#sidebar").screenshot({ path });
  assert.ok(readFileSync(path).length > 5000);
  if (process.env.HEADROOM_UPDATE_SCREENSHOT === "1") {
    mkdirSync(join(REPO, "docs"), { recursive: true });
    copyFileSync(path, join(REPO, "docs", "panel.png"));
  }
  await page.close();
});
