// A localhost server for the browser tests: the pack's web/ under /extensions/headroom/, the harness,
// ComfyUI's /scripts/app.js and api.js as shims onto the harness fakes, the real templates, and the
// pack's /api/headroom/* routes answered by `mock` (the route contract, with canned numbers).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = fileURLToPath(new URL(".", import.meta.url));
export const REPO = normalize(join(HERE, "..", "..", ".."));
export const SHARED = normalize(join(REPO, "..", "shared"));
const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".html": "text/html" };

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Headroom panel test</title>
<style>body{margin:0;background:#202020;color:#ddd}#sidebar{width:380px;min-height:560px;background:#262626}</style>
</head><body><div id="sidebar"></div></body></html>`;

const SHIMS = {
  "/scripts/app.js": "export const app = window.__comfy.app;\n",
  "/scripts/api.js": "export const api = window.__comfy.api;\n",
};

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : null;
}

function safeJoin(root, rel) {
  const path = normalize(join(root, rel));
  if (!path.startsWith(root)) throw new Error("outside root");
  return path;
}

export async function startServer(mock) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    const send = (status, data, type = "application/json") => {
      res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
      res.end(typeof data === "string" || Buffer.isBuffer(data) ? data : JSON.stringify(data));
    };
    try {
      if (url.pathname === "/") return send(200, PAGE, "text/html");
      if (SHIMS[url.pathname]) return send(200, SHIMS[url.pathname], "text/javascript");
      let file = null;
      if (url.pathname.startsWith("/extensions/headroom/")) file = safeJoin(join(REPO, "web"), url.pathname.slice(21));
      if (url.pathname.startsWith("/harness/")) file = safeJoin(HERE, url.pathname.slice(9));
      if (url.pathname.startsWith("/fixtures/")) file = safeJoin(join(HERE, "..", "fixtures"), url.pathname.slice(10));
      if (url.pathname.startsWith("/templates/")) file = safeJoin(join(SHARED, "real-workflows"), decodeURIComponent(url.pathname.slice(11)));
      if (url.pathname.startsWith("/workflows/")) file = safeJoin(join(REPO, "workflows"), decodeURIComponent(url.pathname.slice(11)));
      if (file) return send(200, await readFile(file), TYPES[extname(file)] ?? "application/octet-stream");
      if (url.pathname.startsWith("/api/headroom/")) {
        const payload = req.method === "POST" ? await body(req) : null;
        const route = url.pathname.slice(4);
        requests.push({ method: req.method, route, body: payload });
        const [status, data] = await mock(req.method, route, payload);
        return send(status, data);
      }
      send(404, { error: "not found" });
    } catch (err) {
      send(500, { error: String(err) });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, requests, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}
