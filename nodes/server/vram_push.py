"""The websocket push of VRAM readings (`headroom.vram`) to every client whose Headroom panel is open.

ComfyUI is often reachable on a LAN with no login, so the set of clients is bounded: at most MAX_CLIENTS
ids of at most MAX_CLIENT_ID_CHARS characters, the least recently opened going first, and an id whose
websocket has been gone for FORGET_AFTER_S is forgotten. Every tick sends to each id, so an unbounded set
made every tick, and every other request with it, slower."""
import asyncio
import sys
import time
from collections import OrderedDict

from . import settings
from ..comfyui import vram_snapshot

VRAM_EVENT = "headroom.vram"
# One per open browser tab; a household or a small team has a handful.
MAX_CLIENTS = 64
# ComfyUI names its clients with uuid4().hex (32 characters); the browser sends that id back.
MAX_CLIENT_ID_CHARS = 256
# Long enough for a browser to reconnect after the network or the machine slept: the frontend keeps its
# client id and does not open the panel again, so a forgotten id gets no more readings.
FORGET_AFTER_S = 300.0


def check_client_id(client_id):
    """None (every client, as ComfyUI's send_sync reads it) or a string of at most MAX_CLIENT_ID_CHARS
    characters; ValueError naming client_id otherwise."""
    if client_id is not None and not isinstance(client_id, str):
        raise ValueError(f"client_id: expected a string, got {type(client_id).__name__}")
    if client_id is not None and len(client_id) > MAX_CLIENT_ID_CHARS:
        raise ValueError(f"client_id: expected at most {MAX_CLIENT_ID_CHARS} characters, got {len(client_id)}")
    return client_id


def _send_via_comfy(event, data, sid):
    from server import PromptServer
    PromptServer.instance.send_sync(event, data, sid)


def _comfy_sockets():
    """ComfyUI's open websockets by client id (PromptServer.sockets), or None where it cannot be told.
    The server module is only looked up: by the time a panel opens, ComfyUI has imported it."""
    server = sys.modules.get("server")
    instance = getattr(getattr(server, "PromptServer", None), "instance", None)
    sockets = getattr(instance, "sockets", None)
    return sockets if isinstance(sockets, dict) else None


class VramPusher:
    """Sends a VRAM reading to every client whose panel is open, every `refresh_s` seconds."""

    def __init__(self, send=None, sockets=None, clock=time.monotonic):
        self.send = send or _send_via_comfy
        self.sockets = sockets or _comfy_sockets
        self.clock = clock
        self.clients = OrderedDict()  # client id -> when its websocket was last seen open; oldest open first
        self.task = None

    def open(self, client_id):
        check_client_id(client_id)
        self.clients[client_id] = self.clock()
        self.clients.move_to_end(client_id)
        while len(self.clients) > MAX_CLIENTS:
            del self.clients[self._eviction()]
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    def close(self, client_id):
        check_client_id(client_id)
        self.clients.pop(client_id, None)

    def _eviction(self):
        """The least recently opened id without an open websocket, else the least recently opened: ids
        nobody listens on go before a live panel does."""
        sockets = self.sockets()
        if sockets is not None:
            for client in self.clients:
                if client is not None and client not in sockets:
                    return client
        return next(iter(self.clients))

    def listening(self) -> list:
        """The ids to send to now. One whose websocket is closed gets nothing (ComfyUI would drop it) and is
        forgotten once it has been closed FORGET_AFTER_S."""
        sockets = self.sockets()
        if sockets is None:  # outside ComfyUI (tests, tools): every id opened
            return list(self.clients)
        now = self.clock()
        out = []
        for client, seen in list(self.clients.items()):
            if client is None or client in sockets:
                self.clients[client] = now
                out.append(client)
            elif now - seen > FORGET_AFTER_S:
                del self.clients[client]
        return out

    async def _run(self):
        while self.clients:
            clients = self.listening()
            if clients:
                reading = vram_snapshot.snapshot()
                for client in clients:
                    self.send(VRAM_EVENT, reading, client)
            await asyncio.sleep(settings.get()["refresh_s"])
