import { chromium } from "playwright-core";
import { readFileSync, mkdtempSync } from "node:fs";
const ctx = await chromium.launchPersistentContext(mkdtempSync("/tmp/hr-prof-"), { executablePath: "/usr/bin/chromium", headless: true,
  viewport: { width: 1400, height: 900 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
const page = await ctx.newPage();
const logs = [];
page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
page.on("pageerror", (e) => logs.push(`pageerror: ${e}`));
await page.goto("http://127.0.0.1:18188/");
await page.waitForFunction(() => window.app?.graph && window.app.extensions?.length > 0, null, { timeout: 60000 });
const names = await page.evaluate(() => window.app.extensions.map((e) => e.name));
console.log("has headroom ext:", names.includes("headroom.panel"), "rootGraph:", await page.evaluate(() => !!window.app.rootGraph));
const wf = JSON.parse(readFileSync("/work/main/workflows/wan2.1_t2v_1.3b.json", "utf8"));
await page.evaluate((wf) => window.app.loadGraphData(wf), wf);
const pre = await page.evaluate(() => window.app.graph.nodes.filter((n) => n.type.startsWith("Headroom")).map((n) => [n.type, n.widgets?.map((w) => `${w.name}=${w.value}`)]));
console.log(JSON.stringify(pre));
// open the sidebar tab
const btn = await page.$(".pi-gauge");
console.log("tab button:", !!btn);
if (btn) { await btn.click(); await page.waitForSelector(".headroom-panel", { timeout: 10000 }); }
await page.waitForTimeout(2500);
console.log("panel text:", (await page.textContent(".headroom-panel"))?.slice(0, 300));
await page.screenshot({ path: "/tmp/nodes-scratch/real-ui.png" });
// OOM toast through a real websocket-style event
await page.evaluate(() => window.comfyAPI?.api?.api?.dispatchEvent?.(new CustomEvent("execution_error", { detail: { exception_type: "torch.OutOfMemoryError", exception_message: "CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of 44.53 GiB of which 91.25 MiB is free." } })));
await page.waitForTimeout(2000);
console.log("toast:", await page.$(".headroom-toast") ? (await page.textContent(".headroom-toast")).slice(0, 200) : null);
console.log(logs.filter((l) => /headroom|error/i.test(l)).slice(0, 15).join("\n"));
await ctx.close();
