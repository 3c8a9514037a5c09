"""Flood after flood of replays from clients that never read (tests/e2e/flood.py), in one
process on the manual clock: its memory levels off. Real server process, raw sockets. (The
pace under one flood, on the real clock, is test_feed_flood_pace.py.)"""

from __future__ import annotations

import contextlib
import itertools

import httpx

from tests.conftest import Server, StartServer
from tests.e2e.flood import (
    CHANNELS,
    CONNECTIONS,
    SUBSCRIBES,
    port_of,
    rss_mb,
    served_with_a_replay_window,
)
from tests.e2e.support import Scrape, eventually
from tests.feed.support import RawClient

FLOODS = 4


def test_memory_after_replay_floods_levels_off(start_server: StartServer) -> None:
    """Flood after flood in one process, each as above until its clients are gone. The first
    leaves the server larger (its allocators' high-water mark, the worker threads of the
    replay reads); the later ones together add less than it did, where a flood leaving
    something behind would add as much each time. On the manual clock, so no tick grows the
    store meanwhile (the store keeps what it wrote since its last checkpoint in memory: up to
    about 16 MiB that would count against the floods)."""
    server = served_with_a_replay_window(start_server, clock="manual")
    pid, port = server.process.pid, port_of(server)
    frame = {"op": "subscribe", "channels": CHANNELS, "from_tick": 1}
    after = [rss_mb(pid)]  # calm
    for _ in range(FLOODS):
        attackers = [RawClient(port) for _ in range(CONNECTIONS)]
        for _ in range(SUBSCRIBES):
            for client in attackers:
                with contextlib.suppress(OSError):  # closed as a slow consumer, or full
                    client.send_json(frame)
        for client in attackers:
            client.close()
        eventually(lambda: _subscribers(server) == 0, "the flood's connections gone", server)
        after.append(rss_mb(pid))
    added = [later - before for before, later in itertools.pairwise(after)]
    print(f"\nrss MB calm {after[0]:.1f}, after each flood {after[1:]}: added {added}")
    assert sum(added[1:]) < added[0], added
    assert "Traceback" not in server.log()


def _subscribers(server: Server) -> float | None:
    """The open websocket connections, or None while the server is too busy to answer."""
    try:
        return Scrape(server.client).value("burstmarket_feed_subscribers")
    except httpx.TimeoutException:
        return None  # still working through the flood on a busy host
