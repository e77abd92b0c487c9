"""The websocket push of VRAM readings (`headroom.vram`) to every client whose Headroom panel is open."""
import asyncio

from . import settings, vram_snapshot

VRAM_EVENT = "headroom.vram"


def _send_via_comfy(event, data, sid):
    from server import PromptServer
    PromptServer.instance.send_sync(event, data, sid)


class VramPusher:
    """Sends a VRAM reading to every client whose panel is open, every `refresh_s` seconds."""

    def __init__(self, send=None):
        self.send = send or _send_via_comfy
        self.clients = set()
        self.task = None

    def open(self, client_id):
        self.clients.add(client_id)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    def close(self, client_id):
        self.clients.discard(client_id)

    async def _run(self):
        while self.clients:
            reading = vram_snapshot.snapshot()
            for client in list(self.clients):
                self.send(VRAM_EVENT, reading, client)
            await asyncio.sleep(settings.get()["refresh_s"])
