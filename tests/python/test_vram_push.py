"""The panel's client set (issue 27, item 3): bounded in number and in id length, the least recently
opened going first, ids whose websocket is gone getting nothing and then forgotten."""
import asyncio

import pytest

from conftest import load_pack

load_pack()
from headroom_pack.nodes.server import settings, vram_push  # noqa: E402


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def pusher(sockets=None, sent=None, clock=None):
    sent = [] if sent is None else sent
    return vram_push.VramPusher(send=lambda e, d, sid: sent.append(sid),
                                sockets=(lambda: sockets) if sockets is not None else None,
                                clock=clock or Clock())


def opened(p, ids):
    async def main():
        for client in ids:
            p.open(client)
        p.task.cancel()
    asyncio.run(main())


def test_at_most_max_clients_the_least_recently_opened_going_first():
    p = pusher()
    opened(p, [f"c{i}" for i in range(1000)] + ["c900"])  # c900 opened again: now the newest
    assert len(p.clients) == vram_push.MAX_CLIENTS == 64
    assert list(p.clients) == [f"c{i}" for i in range(936, 1000) if i != 900][-63:] + ["c900"]
    assert "c0" not in p.clients and list(p.clients)[-1] == "c900"


def test_ids_nobody_listens_on_are_evicted_before_a_live_panel():
    sockets = {"live": object()}
    p = pusher(sockets=sockets)
    opened(p, ["live"] + [f"ghost{i}" for i in range(200)])
    assert "live" in p.clients and len(p.clients) == 64


@pytest.mark.parametrize("client_id", ["x" * 257, "x" * (15 * 1024 * 1024), 5, ["a"]])
def test_client_ids_too_long_or_not_strings_are_refused(client_id):
    p = pusher()
    with pytest.raises(ValueError, match="^client_id: expected"):
        opened(p, [client_id])
    assert len(p.clients) == 0


def test_an_id_of_the_limit_and_none_are_taken():
    p = pusher()
    opened(p, ["x" * vram_push.MAX_CLIENT_ID_CHARS, None])
    assert len(p.clients) == 2


def test_closed_websockets_get_nothing_and_are_forgotten_after_the_grace():
    clock = Clock()
    sockets = {"a": object(), "b": object()}
    p = pusher(sockets=sockets, clock=clock)
    opened(p, ["a", "b", None])
    assert p.listening() == ["a", "b", None]
    del sockets["b"]  # that tab closed (or its network dropped)
    clock.now += 10
    assert p.listening() == ["a", None] and "b" in p.clients  # a reconnect within the grace keeps it
    sockets["b"] = object()
    clock.now += 10
    assert p.listening() == ["a", "b", None]
    del sockets["b"]
    clock.now += vram_push.FORGET_AFTER_S + 1
    assert p.listening() == ["a", None] and "b" not in p.clients


def test_the_push_sends_only_to_connected_clients_and_stops_when_none_is_left(monkeypatch):
    monkeypatch.setattr(vram_push.vram_snapshot, "snapshot", lambda: {"total_bytes": 1})
    settings.update({"refresh_s": 0.2})
    clock, sent = Clock(), []
    sockets = {"a": object()}
    p = pusher(sockets=sockets, sent=sent, clock=clock)

    async def main():
        p.open("a")
        p.open("gone")
        await asyncio.sleep(0.1)
        clock.now += vram_push.FORGET_AFTER_S + 1
        del sockets["a"]
        await asyncio.wait_for(p.task, 2)  # both forgotten: the loop ends by itself
    try:
        asyncio.run(main())
    finally:
        settings.reset()
    assert sent == ["a"] and len(p.clients) == 0


def test_outside_comfyui_every_opened_id_is_sent_to():
    assert vram_push._comfy_sockets() is None  # no server module here
    p = pusher()
    opened(p, ["a", "b"])
    assert p.listening() == ["a", "b"]
