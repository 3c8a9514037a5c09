"""Beyond one machine, on loopback: a real redis-server, two market processes each running its
own island (`serve --bus … --islands …`), two feed edges (`burstmarket feed --bus …`), and
websocket subscribers on both edges (docs/beyond-one-machine.md)."""

from __future__ import annotations

import json
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from tests.conftest import BURSTMARKET, RedisServer, Server, StartServer, free_port
from tests.e2e.feed_client import recv, send, ws_url
from tests.e2e.support import eventually, ok, tick
from tests.e2e.test_feed_e2e import populate

pytestmark = pytest.mark.e2e

ISLANDS = ("north", "south")
FEEDS = ("ladder", "rates", "stats")
CHANNELS = [f"{feed}:{island}" for island in ISLANDS for feed in FEEDS]
LEASE = "3"
"""Seconds an island's lease outlives its owner (the hand-over waits that long)."""


class Watcher:
    """A websocket subscriber to every channel of both islands, keeping every tick it was sent
    per channel, and the messages themselves."""

    def __init__(self, ws: ClientConnection, from_tick: int | None = None) -> None:
        self.ws = ws
        self.ticks: dict[str, list[int]] = {channel: [] for channel in CHANNELS}
        self.messages: dict[tuple[str, int], dict[str, Any]] = {}
        frame: dict[str, Any] = {"op": "subscribe", "channels": CHANNELS}
        if from_tick is not None:
            frame["from_tick"] = from_tick
        send(self.ws, frame)
        assert recv(self.ws) == {"type": "subscribed", "channels": CHANNELS}

    def until(self, last: int) -> None:
        """Read until every channel has had tick `last` (heartbeats skipped)."""
        while min((ticks[-1] if ticks else 0) for ticks in self.ticks.values()) < last:
            message = recv(self.ws, timeout=60)
            if message["type"] in ("update", "snapshot"):
                self.ticks[message["channel"]].append(message["tick"])
                self.messages[message["channel"], message["tick"]] = message

    def assert_gap_free(self, first: int, last: int) -> None:
        for channel, ticks in self.ticks.items():
            assert ticks == list(range(first, last + 1)), channel


def tick_both(markets: tuple[Server, Server], times: int = 1) -> None:
    for market in markets:
        tick(market, times)


def ready(edge: Server) -> bool:
    return edge.client.get("/readyz").status_code == 200


def start_market(start_server: StartServer, bus: str, island: str, data: Path) -> Server:
    return start_server(
        "--clock",
        "manual",
        "--bus",
        bus,
        "--islands",
        island,
        "--lease-seconds",
        LEASE,
        data_dir=data,
    )


def claim(bus: str, island: str, data: Path) -> subprocess.CompletedProcess[str]:
    """`serve` for an island, expected to refuse at start (it is never left running)."""
    return subprocess.run(
        [
            str(BURSTMARKET),
            "serve",
            "--clock",
            "manual",
            "--bus",
            bus,
            "--islands",
            island,
            "--data-dir",
            str(data),
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_two_markets_two_edges_one_bus(
    start_server: StartServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    bus = redis_server.url
    north = start_market(start_server, bus, "north", tmp_path / "north")
    south = start_market(start_server, bus, "south", tmp_path / "south")
    markets = (north, south)
    populate(north, "north")
    populate(south, "south")
    # Each process runs its own island only.
    elsewhere = north.client.put(
        "/api/admin/islands/south",
        headers=north.operator(),
        json={"gpus_per_node": 8, "nodes": 4, "reserve_price": 1.0},
    )
    assert (elsewhere.status_code, elsewhere.json()["error"]) == (404, "not-found")
    assert [island["id"] for island in ok(north.client.get("/api/islands"))] == ["north"]
    tick_both(markets)  # tick 1 of each island
    edges = [start_server("--bus", bus, subcommand="feed") for _ in range(2)]
    for edge in edges:
        eventually(
            lambda edge=edge: all(  # type: ignore[misc]
                edge.client.get("/api/market/stats", params={"island": island}).status_code == 200
                for island in ISLANDS
            ),
            "both islands on the edge",
            edge,
        )
    with ExitStack() as sockets:
        watchers = [Watcher(sockets.enter_context(connect(ws_url(edge)))) for edge in edges]
        # Live: both edges, both islands, every channel, the same updates, gap-free.
        for watcher in watchers:
            watcher.until(1)  # the snapshots
        tick_both(markets, 3)
        for watcher in watchers:
            watcher.until(4)
            watcher.assert_gap_free(1, 4)
        assert watchers[0].messages == watchers[1].messages
        for island, market in zip(ISLANDS, markets, strict=True):
            for path in ("/api/market/stats", "/api/market/ladder", "/api/market/rates"):
                served = [
                    ok(server.client.get(path, params={"island": island}))
                    for server in (market, *edges)
                ]
                assert served[0] == served[1] == served[2], path
        # Past the bus's history, the market's refusal.
        with connect(ws_url(edges[0])) as ws:
            send(ws, {"op": "subscribe", "channels": ["stats:north"], "from_tick": 9, "id": 7})
            refused = recv(ws)
            assert (
                refused["type"],
                refused["error"],
                refused["field"],
                refused["id"],
                refused["earliest_tick"],
                refused["next_tick"],
            ) == ("error", "invalid", "from_tick", 7, 1, 5)
        schema = [ok(server.client.get("/schema/asyncapi.json")) for server in (north, *edges)]
        market_doc, *edge_docs = (
            {k: v for k, v in doc.items() if k != "servers"} for doc in schema
        )
        assert edge_docs[0] == edge_docs[1]
        # the market's document is an edge's plus the clusters' own channel, which no edge
        # serves (docs/api.md): every public feed's channel reads the same on all three
        feeds = [name for name in edge_docs[0]["channels"] if name != "market"]
        assert feeds
        assert set(market_doc["channels"]) - set(feeds) == {"market", "cluster"}
        for name in feeds:
            assert market_doc["channels"][name] == edge_docs[0]["channels"][name], name

        # An edge dies; its subscriber comes back on the other edge with from_tick: no loss.
        edges[0].kill()
        tick_both(markets, 2)
        moved = Watcher(sockets.enter_context(connect(ws_url(edges[1]))), from_tick=5)
        watchers[0] = moved
        tick_both(markets)
        for watcher in watchers:
            watcher.until(7)
        moved.assert_gap_free(5, 7)
        watchers[1].assert_gap_free(1, 7)

        # Redis stops (and comes back empty): the markets keep committing, the edge keeps its
        # sockets and says it is not ready; then every tick missed arrives, in order.
        redis_server.stop()
        eventually(lambda: not ready(edges[1]), "the edge not ready without Redis", edges[1])
        tick_both(markets, 2)  # ticks 8 and 9, committed with no bus
        assert ok(north.client.get("/api/market/stats", params={"island": "north"}))["tick"] == 9
        redis_server.start()
        eventually(lambda: ready(edges[1]), "the edge ready again", edges[1])
        tick_both(markets)
        for watcher in watchers:
            watcher.until(10)
        moved.assert_gap_free(5, 10)
        watchers[1].assert_gap_free(1, 10)
        assert "lost the bus" in edges[1].log()
        assert "Redis does not answer" in north.log()

        # A second process claiming an island that is run refuses to start.
        refused = claim(bus, "north", tmp_path / "other")
        assert refused.returncode == 1, refused
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "island north is run by another process" in lines[0]
        assert not (tmp_path / "other" / "market.duckdb").exists()  # never opened

        # The owner of north dies; a process configured for north takes it over from its
        # data dir once the lease lapses, and the edge's subscribers miss nothing.
        north.kill()
        successor = eventually(
            lambda: try_start(start_server, bus, tmp_path / "north"), "the successor starting"
        )
        tick(successor)
        tick(south)
        for watcher in watchers:
            watcher.until(11)
        moved.assert_gap_free(5, 11)
        watchers[1].assert_gap_free(1, 11)


def try_start(start_server: StartServer, bus: str, data: Path) -> Server | None:
    """The successor, once the dead owner's lease has lapsed (before that it refuses)."""
    try:
        return start_market(start_server, bus, "north", data)
    except RuntimeError as refused:
        if "island north is run by another process" not in str(refused):
            raise
        time.sleep(0.5)
        return None


def test_an_edge_serves_no_tenant_endpoint_and_knows_no_island_it_has_not_seen(
    start_server: StartServer, redis_server: RedisServer
) -> None:
    edge = start_server("--bus", redis_server.url, subcommand="feed")
    eventually(lambda: ready(edge), "the edge ready", edge)
    assert edge.client.get("/api/vm/capacity").status_code == 404
    assert edge.client.get("/api/admin/accounts/x").status_code == 404
    missing = edge.client.get("/api/market/stats", params={"island": "nowhere"})
    assert missing.status_code == 404
    assert missing.json()["error"] == "unknown-island"
    with connect(ws_url(edge)) as ws:
        send(ws, {"op": "subscribe", "channels": ["stats:nowhere"], "id": 1})
        answer = recv(ws)
        assert (answer["type"], answer["error"], answer["id"]) == ("error", "unknown-island", 1)
    assert json.loads(edge.client.get("/version").text)["version"]
