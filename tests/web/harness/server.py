"""A localhost server for the browser tests: the pack's web/ under /extensions/headroom/, the harness,
ComfyUI's /scripts/app.js and api.js as shims onto the harness fakes, the real templates, and the
pack's /api/headroom/* routes answered by `mock` (the route contract, with canned numbers)."""
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SHARED = REPO.parent / "shared"
TEMPLATES = SHARED / "real-workflows"
TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".html": "text/html"}

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Headroom panel test</title>
<style>body{margin:0;background:#202020;color:#ddd}#sidebar{width:380px;min-height:560px;background:#262626}</style>
</head><body><div id="sidebar"></div></body></html>"""

SHIMS = {
    "/scripts/app.js": "export const app = window.__comfy.app;\n",
    "/scripts/api.js": "export const api = window.__comfy.api;\n",
}

# URL prefix -> (folder, whether the rest of the path is percent-decoded first).
FOLDERS = [
    ("/extensions/headroom/", REPO / "web", False),
    ("/harness/", HERE, False),
    ("/fixtures/", HERE.parent / "fixtures", False),
    ("/templates/", TEMPLATES, True),
    ("/workflows/", REPO / "workflows", True),
]


class OutsideRoot(Exception):
    pass


def safe_join(root, rel):
    """root/rel, refusing anything that normalises to outside root (lexically, as the Node server did;
    a sibling folder whose name merely starts with root's is refused too)."""
    root = os.path.normpath(root)
    path = os.path.normpath(os.path.join(root, rel))
    if os.path.commonpath([root, path]) != root:
        raise OutsideRoot(rel)
    return Path(path)


class Server:
    def __init__(self, mock):
        self.mock = mock
        # Appended from the handler threads, read by the tests: list.append is atomic.
        self.requests = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="headroom-web-server", daemon=True)
        self._thread.start()

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def routed(self, route):
        return [r for r in self.requests if r["route"] == route]

    def wait_until(self, condition, timeout=5.0):
        """Polls condition() until it holds or timeout seconds pass; returns its last value. For
        requests the page sends without the test having anything in the page to wait on."""
        deadline = time.monotonic() + timeout
        while not (value := condition()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return value

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status, data, content_type="application/json"):
                if isinstance(data, str):
                    data = data.encode("utf-8")
                elif not isinstance(data, bytes):
                    data = json.dumps(data).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    path = urlsplit(self.path).path
                    if path == "/":
                        return self.send(200, PAGE, "text/html")
                    if path in SHIMS:
                        return self.send(200, SHIMS[path], "text/javascript")
                    for prefix, root, decode in FOLDERS:
                        if path.startswith(prefix):
                            rel = path[len(prefix):]
                            file = safe_join(root, unquote(rel) if decode else rel)
                            if not file.is_file():
                                return self.send(404, {"error": "not found"})
                            return self.send(200, file.read_bytes(), TYPES.get(file.suffix, "application/octet-stream"))
                    if path.startswith("/api/headroom/"):
                        text = raw.decode("utf-8") if self.command == "POST" else ""
                        payload = json.loads(text) if text else None
                        route = path[len("/api"):]
                        server.requests.append({"method": self.command, "route": route, "body": payload})
                        status, data = server.mock(self.command, route, payload)
                        return self.send(status, data)
                    self.send(404, {"error": "not found"})
                except OutsideRoot:
                    self.send(403, {"error": "outside root"})
                except Exception as err:  # the page gets the reason, not a dropped connection
                    self.send(500, {"error": f"{type(err).__name__}: {err}"})

            do_GET = do_POST = do_PUT = do_DELETE = handle_any

        return Handler
