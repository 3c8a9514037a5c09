"""The websocket feed over a real server and real websocket clients."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec import to_builtins
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from burstmarket.feed.messages import Row
from burstmarket.feed.service import FeedOptions
from tests.feed.support import FeedServer, MarketDB, RawClient, backfill

HOLD = {"a": (16, "2.5"), "b": (8, "3.1")}


def recv(ws: ClientConnection, timeout: float = 10) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(ws.recv(timeout=timeout))
    return message


def send(ws: ClientConnection, frame: Any) -> None:
    ws.send(json.dumps(frame) if not isinstance(frame, str | bytes) else frame)


def test_snapshot_then_one_update_per_tick_gap_free(server: FeedServer) -> None:
    server.tick("east", 1, holdings=HOLD, ladder=["2.5", "3.1001"])
    with connect(server.ws_url) as ws:
        send(ws, {"op": "subscribe", "channels": ["stats:east", "ladder:east"]})
        assert recv(ws) == {"type": "subscribed", "channels": ["stats:east", "ladder:east"]}
        stats, ladder = recv(ws), recv(ws)
        assert (stats["type"], stats["channel"], stats["tick"]) == ("snapshot", "stats:east", 1)
        assert (ladder["type"], ladder["channel"], ladder["tick"]) == ("snapshot", "ladder:east", 1)
        assert stats["time"] == "2025-03-31T23:00:00Z"
        # 2.5 * 16 + 3.1 * 8 over 24 GPUs = 2.7: the writer's own figures, as published.
        assert stats["data"] == {
            "vwap": 2.7,
            "min": 2.5,
            "max": 3.1,
            "gpus": 24,
            "clusters": 2,
            "pending_gpus": 0,
            "reserve_price": 1.5,
        }
        assert ladder["data"]["rungs"][1] == {
            "nodes": 2,
            "gpus": 16,
            "price_per_gpu_hour": 3.1001,
            "contestable_at": None,
            "reason": None,
            "later": [],
        }

        seen: dict[str, list[int]] = {"stats:east": [], "ladder:east": []}
        for tick in range(2, 6):
            event = server.tick("east", tick, holdings={"a": (8 * tick, "2.0")}, ladder=["2.0"])
            for _ in range(2):
                message = recv(ws)
                assert message["type"] == "update"
                seen[message["channel"]].append(message["tick"])
                if message["channel"] == "stats:east":
                    rest = httpx.get(
                        f"{server.url}/api/market/stats", params={"island": "east"}
                    ).json()
                    assert rest == to_builtins(event.stats)
                    assert message["data"] == {
                        k: v for k, v in rest.items() if k not in ("island", "tick", "time")
                    }
        assert seen == {"stats:east": [2, 3, 4, 5], "ladder:east": [2, 3, 4, 5]}


def test_from_tick_replays_missed_ticks_from_the_store_then_goes_live(server: FeedServer) -> None:
    live: list[dict[str, Any]] = []
    with connect(server.ws_url) as watcher:
        server.tick("east", 1, holdings=HOLD)
        send(watcher, {"op": "subscribe", "channels": ["stats:east"]})
        recv(watcher)
        recv(watcher)
        with connect(server.ws_url) as ws:
            send(ws, {"op": "subscribe", "channels": ["stats:east"]})
            assert [recv(ws)["type"], recv(ws)["tick"]] == ["subscribed", 1]
            server.tick("east", 2, holdings=HOLD)
            assert recv(ws)["tick"] == 2
            live.append(recv(watcher))
        # Disconnected: ticks 3..5 happen while this client is away.
        for tick in range(3, 6):
            server.tick("east", tick, holdings={"a": (8, str(2 + tick))}, pending=tick)
            live.append(recv(watcher))
        with connect(server.ws_url) as ws:
            send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": 3})
            assert recv(ws)["type"] == "subscribed"
            # No snapshot: the missed ticks first, read back from DuckDB, equal to what went out
            # live field for field; then live.
            replayed = [recv(ws) for _ in range(3)]
            assert replayed == live[1:]
            server.tick("east", 6, holdings=HOLD)
            assert recv(ws)["tick"] == 6
            # From the next tick: nothing to replay, nothing sent until it comes.
            send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": 7})
            assert recv(ws)["type"] == "subscribed"
            with pytest.raises(TimeoutError):
                recv(ws, timeout=1)
            server.tick("east", 7, holdings=HOLD)
            update = recv(ws)
            assert (update["type"], update["tick"]) == ("update", 7)
            # A new from_tick replaces the stream: from 5 again, then live.
            send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": 5})
            assert recv(ws)["type"] == "subscribed"
            assert [(m["type"], m["tick"]) for m in (recv(ws), recv(ws), recv(ws))] == [
                ("update", 5),
                ("update", 6),
                ("update", 7),
            ]
            server.tick("east", 8, holdings=HOLD)
            assert recv(ws)["tick"] == 8
            # Without from_tick: the snapshot, then live.
            send(ws, {"op": "subscribe", "channels": ["stats:east"]})
            assert recv(ws)["type"] == "subscribed"
            snapshot = recv(ws)
            assert (snapshot["type"], snapshot["tick"]) == ("snapshot", 8)


def replay_reads_tick(server: FeedServer, publish_after: float | None) -> list[int]:
    """Make the feed commit the next tick of `east` during each replay read: before the read
    (so the read sees it) with its publication `publish_after` seconds later, or, with None,
    after the read with its publication before the read returns. Returns the ticks made."""
    feed = server.feed
    read = feed.service._read_replay
    made: list[int] = []

    async def read_while_ticking(channel: str, from_tick: int, to_tick: int) -> list[Row]:
        event = None
        if publish_after is not None:
            event = server.db.commit("east", latest(server) + 1, holdings=HOLD)
            asyncio.get_running_loop().call_later(publish_after, feed.on_tick, event)
        rows = await read(channel, from_tick, to_tick)
        if event is None:
            event = server.db.commit("east", latest(server) + 1, holdings=HOLD)
            feed.on_tick(event)
        made.append(event.tick)
        return rows

    feed.service._read_replay = read_while_ticking  # type: ignore[method-assign]
    return made


def latest(server: FeedServer) -> int:
    ((tick,),) = (
        server.db.cursor().execute("SELECT max(tick) FROM ticks WHERE island = 'east'").fetchall()
    )
    return int(tick)


@pytest.mark.parametrize(
    "publish_after", [0.5, None], ids=["read-sees-it-published-after", "published-during-read"]
)
def test_a_tick_committed_during_the_replay_comes_once_in_order(
    server: FeedServer, publish_after: float | None
) -> None:
    # 150 ticks: the replay from tick 1 takes three reads; a tick commits during each.
    backfill(server.db, "east", range(1, 150))
    server.tick("east", 150, holdings=HOLD)
    made = replay_reads_tick(server, publish_after)
    with connect(server.ws_url) as ws:
        send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": 1, "id": 1})
        assert recv(ws) == {"type": "subscribed", "channels": ["stats:east"], "id": 1}
        got = [recv(ws) for _ in range(153)]
        assert made == [151, 152, 153]
        assert [(m["type"], m["tick"]) for m in got] == [("update", t) for t in range(1, 154)]
        # Every delayed publication has come (the REST latest follows them), and went nowhere.
        deadline = time.monotonic() + 10
        while get_stats(server)["tick"] != 153:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        server.tick("east", 154, holdings=HOLD)
        update = recv(ws)
        assert (update["type"], update["tick"]) == ("update", 154)


def get_stats(server: FeedServer) -> dict[str, Any]:
    stats: dict[str, Any] = httpx.get(
        f"{server.url}/api/market/stats", params={"island": "east"}
    ).json()
    return stats


def test_from_tick_outside_the_store_window_is_refused_and_the_connection_survives(
    server: FeedServer,
) -> None:
    # 400 ticks of 10 s: the first 40 are more than an hour older than the latest.
    backfill(server.db, "east", range(1, 401))
    server.publish(server.db.commit("east", 401, holdings=HOLD))
    with connect(server.ws_url) as ws:
        for bad, earliest in ((1, 41), (403, 41)):
            send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": bad})
            error = recv(ws)
            assert (error["type"], error["error"], error["field"]) == (
                "error",
                "invalid",
                "from_tick",
            )
            assert (error["earliest_tick"], error["next_tick"]) == (earliest, 402)
        send(ws, {"op": "subscribe", "channels": ["stats:east"], "from_tick": 41})
        assert recv(ws)["type"] == "subscribed"
        replayed = [recv(ws) for _ in range(361)]
        assert {m["type"] for m in replayed} == {"update"}
        assert [m["tick"] for m in replayed] == list(range(41, 402))


def test_malformed_frames_get_errors_and_the_connection_and_server_survive(
    server: FeedServer,
) -> None:
    server.tick("east", 1, holdings=HOLD)
    bad_frames: list[tuple[Any, str, str]] = [
        ("not json at all", "invalid", "frame"),
        (b"\x00\xff\xfe binary garbage", "invalid", "frame"),
        ("[1, 2, 3]", "invalid", "frame"),
        ({"op": "dance"}, "invalid", "op"),
        ({"channels": ["stats:east"]}, "invalid", "op"),
        ({"op": "subscribe"}, "invalid", "channels"),
        ({"op": "subscribe", "channels": []}, "invalid", "channels"),
        ({"op": "subscribe", "channels": "stats:east"}, "invalid", "channels"),
        ({"op": "subscribe", "channels": ["stats:east"], "from_tick": -1}, "invalid", "from_tick"),
        ({"op": "subscribe", "channels": ["stats:east"], "from_tick": "1"}, "invalid", "from_tick"),
        ({"op": "subscribe", "channels": ["stats:east"], "extra": 1}, "invalid", "extra"),
        ({"op": "subscribe", "channels": ["weather:east"]}, "invalid", "channels"),
        ({"op": "subscribe", "channels": ["stats:"]}, "invalid", "channels"),
        ({"op": "subscribe", "channels": ["stats:atlantis"]}, "unknown-island", ""),
    ]
    with connect(server.ws_url) as ws:
        for frame, code, field in bad_frames:
            send(ws, frame)
            error = recv(ws)
            assert (error["type"], error["error"]) == ("error", code), frame
            assert error.get("field", "") == field, frame
            assert error["detail"]
        # Nothing was subscribed by the refused frames; the connection still works.
        send(ws, {"op": "ping"})
        assert recv(ws)["type"] == "pong"
        server.tick("east", 2, holdings=HOLD)
        send(ws, {"op": "subscribe", "channels": ["stats:east"]})
        assert recv(ws)["type"] == "subscribed"
        snapshot = recv(ws)
        assert (snapshot["type"], snapshot["tick"]) == ("snapshot", 2)
    with connect(server.ws_url) as again:
        send(again, {"op": "ping"})
        assert recv(again)["type"] == "pong"


def test_unsubscribe_stops_updates(server: FeedServer) -> None:
    server.tick("east", 1, holdings=HOLD)
    server.tick("west", 1, holdings=HOLD)
    with connect(server.ws_url) as ws:
        send(ws, {"op": "subscribe", "channels": ["stats:east", "stats:west"]})
        assert [recv(ws)["type"] for _ in range(3)] == ["subscribed", "snapshot", "snapshot"]
        send(ws, {"op": "unsubscribe", "channels": ["stats:east"]})
        assert recv(ws) == {"type": "unsubscribed", "channels": ["stats:east"]}
        server.tick("east", 2, holdings=HOLD)
        server.tick("west", 2, holdings=HOLD)
        message = recv(ws)
        assert (message["channel"], message["tick"]) == ("stats:west", 2)


def test_a_feed_declared_only_in_feeds_and_sql_is_published(server: FeedServer) -> None:
    server.tick("east", 1, holdings=HOLD)
    with connect(server.ws_url) as ws:
        send(ws, {"op": "subscribe", "channels": ["rates:east"]})
        assert recv(ws)["type"] == "subscribed"
        assert recv(ws)["data"] == {"rates": [{"gpus": 8, "rate": 3.1}, {"gpus": 16, "rate": 2.5}]}
        server.tick("east", 2, holdings={"c": (8, "4.25")})
        update = recv(ws)
        assert (update["type"], update["tick"]) == ("update", 2)
        assert update["data"] == {"rates": [{"gpus": 8, "rate": 4.25}]}


def test_heartbeat_after_the_quiet_interval(market: MarketDB, tmp_path: Path) -> None:
    # the service's interval is 5 s (the e2e test waits for it); here it is shortened
    with FeedServer(market, tmp_path, FeedOptions(heartbeat_seconds=0.5)) as server:
        server.tick("east", 7, holdings=HOLD)
        with connect(server.ws_url) as ws:
            send(ws, {"op": "subscribe", "channels": ["stats:east"]})
            recv(ws)
            recv(ws)
            beat = recv(ws, timeout=15)
            assert beat["type"] == "heartbeat"
            assert beat["ticks"] == {"east": 7}
            assert beat["time"].endswith("Z")


def test_a_slow_consumer_is_closed_4008_while_a_fast_one_keeps_receiving(
    market: MarketDB, tmp_path: Path
) -> None:
    # Big ladders (3,000 rungs, ~200 kB a message, every rung's price moving each tick, so
    # each update carries them all) fill the socket buffers in a few ticks.
    def ladder_at(tick: int) -> list[str]:
        return [f"{2 + tick / 100 + n / 10_000:.4f}" for n in range(3000)]

    ladder = ladder_at(1)
    options = FeedOptions(backlog=4, close_timeout=60)
    with FeedServer(market, tmp_path, options) as server:
        server.tick("east", 1, ladder=ladder)
        slow = RawClient(server.port)
        slow.send_json({"op": "subscribe", "channels": ["ladder:east"]})
        with connect(server.ws_url, max_size=None) as fast:
            send(fast, {"op": "subscribe", "channels": ["ladder:east"]})
            assert recv(fast)["type"] == "subscribed"
            assert recv(fast)["tick"] == 1
            # The slow client reads nothing while 49 ticks go by; the fast one gets every one.
            for tick in range(2, 51):
                server.tick("east", tick, ladder=ladder_at(tick))
                update = recv(fast)
                assert (update["type"], update["tick"]) == ("update", tick)
            # Now the slow one reads what was on its way: a gap-free prefix, then 4008.
            messages = []
            opcode, payload = slow.frame()
            while opcode in (0x1, 0x9):  # text, or a keepalive ping (every 20 s)
                if opcode == 0x1:
                    messages.append(json.loads(payload))
                opcode, payload = slow.frame()
            slow.close()
            assert opcode == 0x8
            assert (int.from_bytes(payload[:2], "big"), payload[2:]) == (4008, b"slow-consumer")
            assert [m["type"] for m in messages[:2]] == ["subscribed", "snapshot"]
            ticks = [m["tick"] for m in messages[1:]]
            assert ticks == list(range(1, len(ticks) + 1))
            assert len(ticks) < 50
            # The fast one is still served after the slow one is gone.
            server.tick("east", 51, ladder=ladder[:1])
            update = recv(fast)
            rung = {
                "nodes": 1,
                "gpus": 8,
                "price_per_gpu_hour": 2.01,
                "contestable_at": None,
                "reason": None,
                "later": [],
            }
            assert (update["tick"], update["data"]["changed"]) == (51, [rung])
            assert update["data"]["removed"] == list(range(2, 3001))


def test_a_server_without_the_feed_wire_refuses_websockets(
    market: MarketDB, tmp_path: Path
) -> None:
    with FeedServer(market, tmp_path, ws=WebSocketsSansIOProtocol) as server:
        server.tick("east", 1, holdings=HOLD)
        with pytest.raises(InvalidStatus) as refused:
            connect(server.ws_url).close()
        assert refused.value.response.status_code == 403
        # HTTP is unaffected.
        assert (
            httpx.get(f"{server.url}/api/market/stats", params={"island": "east"}).json()["tick"]
            == 1
        )


def test_request_ids_are_echoed_on_every_answer(server: FeedServer) -> None:
    server.tick("east", 1, holdings=HOLD)
    with connect(server.ws_url) as ws:
        send(ws, {"op": "ping", "id": 42})
        pong = recv(ws)
        assert (pong["type"], pong["id"]) == ("pong", 42)
        send(ws, {"op": "subscribe", "channels": ["stats:east"], "id": "sub-1"})
        assert recv(ws) == {"type": "subscribed", "channels": ["stats:east"], "id": "sub-1"}
        assert "id" not in recv(ws)  # the snapshot answers nobody's frame
        send(ws, {"op": "unsubscribe", "channels": ["stats:east"], "id": -(2**53 - 1)})
        assert recv(ws) == {"type": "unsubscribed", "channels": ["stats:east"], "id": -(2**53 - 1)}
        # Refused frames are answered with their id when it is itself valid.
        for frame, field in (
            ({"op": "dance", "id": 7}, "op"),
            (
                {"op": "subscribe", "channels": ["stats:east"], "from_tick": -1, "id": "x" * 64},
                "from_tick",
            ),
            ({"op": "subscribe", "channels": ["weather:east"], "id": 8}, "channels"),
        ):
            send(ws, frame)
            error = recv(ws)
            assert (error["type"], error["error"], error["field"], error["id"]) == (
                "error",
                "invalid",
                field,
                frame["id"],
            )
        send(ws, {"op": "subscribe", "channels": ["stats:atlantis"], "id": "far"})
        error = recv(ws)
        assert (error["error"], error["island"], error["id"]) == (
            "unknown-island",
            "atlantis",
            "far",
        )
        # An id that is not one (too long, too big, a float, a list) is itself the fault.
        for bad in ("x" * 65, 2**53, 1.5, [1], {"a": 1}, True):
            send(ws, {"op": "ping", "id": bad})
            error = recv(ws)
            assert (error["error"], error["field"]) == ("invalid", "id"), bad
            assert "id" not in error
        # Without an id, answers carry none.
        send(ws, {"op": "ping"})
        assert set(recv(ws)) == {"type", "time"}
