"""The market feed through the real server process: accounts, clusters and declarations made
over the API, ticks driven by POST /api/admin/ticks, real websocket clients on /ws/market.

The shared server ticks every 5 minutes of market time; every tick ticks every island, so each
test makes its own island and only looks at its own channels.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from websockets.sync.client import connect

from tests.conftest import Server, StartServer
from tests.e2e.feed_client import (
    apply_ladder,
    ladders,
    port_of,
    read_until_close,
    recv,
    recv_past_heartbeats,
    send,
    slow_consumer_lines,
    subscribe,
    wait_for_line,
    ws_url,
)
from tests.e2e.support import Scrape, declare, make_account, make_cluster, make_island, ok, tick
from tests.feed.support import RawClient

STATS_KEYS = ("island", "tick", "time")


def populate(server: Server, island: str, nodes: int = 4) -> list[dict[str, str]]:
    """An island with three VM clusters bidding against each other: the 4 nodes go to the two
    highest bids, the third waits (pending GPUs, a non-trivial ladder)."""
    make_island(server, island, nodes=nodes, reserve=1.0)
    make_account(server, f"{island}-acct", balance=100_000)
    clusters = [
        make_cluster(server, f"{island}-acct", island, "vm", f"{island}-{n}")
        for n in ("a", "b", "c")
    ]
    for auth, gpus, price in zip(clusters, (16, 16, 8), (3.5, 2.75, 1.5), strict=True):
        ok(declare(server, auth, gpus, price))
    return clusters


def rest(server: Server, path: str, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = ok(server.client.get(path, params=params))
    return answer


def as_update(body: dict[str, Any], channel: str, kind: str = "update") -> dict[str, Any]:
    """The websocket message that carries the same tick as a REST body."""
    data = {key: value for key, value in body.items() if key not in STATS_KEYS}
    return {
        "type": kind,
        "channel": channel,
        "tick": body["tick"],
        "time": body["time"],
        "data": data,
    }


def test_snapshot_then_one_update_per_tick_matching_the_rest_endpoints(
    shared_server: Server,
) -> None:
    server = shared_server
    clusters = populate(server, "fe1")
    first = tick(server, island="fe1")
    assert (first["tick"], first["gpus"], first["pending_gpus"]) == (1, 32, 8)
    with connect(ws_url(server)) as ws:
        subscribe(ws, ["stats:fe1", "ladder:fe1"])
        stats, ladder = recv(ws), recv(ws)
        assert stats == as_update(
            rest(server, "/api/market/stats", island="fe1"), "stats:fe1", "snapshot"
        )
        assert ladder == as_update(
            rest(server, "/api/market/ladder", island="fe1"), "ladder:fe1", "snapshot"
        )
        assert stats["tick"] == first["tick"]
        rungs = ladder["data"]["rungs"]
        for round_ in range(1, 6):
            # The lowest bidder outbids the others in turn: rates and the ladder move.
            ok(declare(server, clusters[2], 8, 3.5 + round_))
            answer = tick(server, island="fe1")
            updates = {m["channel"]: m for m in (recv(ws), recv(ws))}
            expected_tick = 1 + round_
            assert answer["tick"] == expected_tick
            rest_stats = rest(server, "/api/market/stats", island="fe1")
            assert rest_stats == {key: answer[key] for key in rest_stats}
            assert updates["stats:fe1"] == as_update(rest_stats, "stats:fe1")
            rest_ladder = rest(server, "/api/market/ladder", island="fe1")
            # The ladder's update carries its changes: applied, they make the REST ladder.
            changes = updates["ladder:fe1"]
            whole = as_update(rest_ladder, "ladder:fe1")
            assert {**changes, "data": None} == {**whole, "data": None}
            assert changes["data"]["reserve_price"] == whole["data"]["reserve_price"]
            rungs = apply_ladder(rungs, changes)
            assert rungs == rest_ladder["rungs"]
            assert rest_ladder["tick"] == expected_tick
        # `max_nodes` cuts the REST ladder short; the rungs are the feed's first ones.
        cut = rest(server, "/api/market/ladder", island="fe1", max_nodes=1)
        assert cut["rungs"] == rungs[:1]


def test_from_tick_after_a_disconnect_replays_exactly_what_went_out_live(
    shared_server: Server,
) -> None:
    server = shared_server
    clusters = populate(server, "fe2")
    tick(server)
    channels = ["stats:fe2", "ladder:fe2"]
    live: list[dict[str, Any]] = []
    with connect(ws_url(server)) as watcher:
        subscribe(watcher, channels)
        snapshot = next(m for m in (recv(watcher), recv(watcher)) if m["channel"] == channels[1])
        with connect(ws_url(server)) as ws:
            subscribe(ws, channels)
            recv(ws), recv(ws)
            tick(server)
            seen = [recv(ws), recv(ws)]
            live += [recv(watcher), recv(watcher)]
            assert seen == live
            last = seen[-1]["tick"]
        # Away for three ticks, during which the market moves.
        for price in (4.0, 5.25, 2.0):
            ok(declare(server, clusters[2], 8, price))
            tick(server)
            live += [recv(watcher), recv(watcher)]
        with connect(ws_url(server)) as ws:
            subscribe(ws, channels, from_tick=last + 1)
            replayed = [recv(ws) for _ in range(2 * 3)]  # no snapshot: the missed ticks first
            assert [m for m in replayed if m["channel"] == "stats:fe2"] == [
                m for m in live[2:] if m["channel"] == "stats:fe2"
            ]
            # The ladder: its replay's first update whole, then its changes, the same ladders
            # tick by tick as went out live (changes since the watcher's snapshot).
            assert "rungs" in next(m for m in replayed if m["channel"] == "ladder:fe2")["data"]
            went_out = ladders([snapshot, *live], "ladder:fe2")[-3:]
            assert ladders(replayed, "ladder:fe2") == went_out
            # Then live again, gap-free.
            tick(server)
            assert {(m["channel"], m["tick"]) for m in (recv(ws), recv(ws))} == {
                (channel, last + 4) for channel in channels
            }


def test_from_tick_replays_first_in_order_while_ticks_commit(
    start_server: StartServer,
) -> None:
    """Ticks commit back to back while the replay is read and sent: each channel still goes
    from_tick … latest, then live, each tick once. (Which ticks meet which read is up to the
    machine here; tests/feed/test_socket.py commits ticks inside the replay's reads.)"""
    server = start_server("--clock", "manual", "--tick-seconds", "10")
    populate(server, "fe7")
    tick(server, 100)
    channels = ["stats:fe7", "ladder:fe7"]
    committed: list[int] = []

    def ticker() -> None:
        for _ in range(30):
            committed.append(tick(server)["tick"])

    with connect(ws_url(server)) as ws:
        ticking = threading.Thread(target=ticker)
        ticking.start()
        while not committed:
            time.sleep(0.001)
        send(ws, {"op": "subscribe", "channels": channels, "from_tick": 1, "id": "replay"})
        ticking.join()
        assert recv(ws) == {"type": "subscribed", "channels": channels, "id": "replay"}
        final = committed[-1]
        assert final == 130  # three reads of the store for each channel
        got = [recv(ws) for _ in range(2 * final)]
        for channel in channels:
            sent = [(m["type"], m["tick"]) for m in got if m["channel"] == channel]
            assert sent == [("update", n) for n in range(1, final + 1)], channel
        tick(server)
        assert {(m["type"], m["channel"], m["tick"]) for m in (recv(ws), recv(ws))} == {
            ("update", channel, final + 1) for channel in channels
        }


def test_a_client_that_stops_reading_is_closed_4008_with_one_log_line(
    start_server: StartServer,
) -> None:
    # A quiet feed: nothing fills the backlog. The keepalive ping (every second here, 20 s by
    # default) goes unanswered by a client that does not read, and that closes it.
    server = start_server("--clock", "manual", "--feed-ping-seconds", "1")
    populate(server, "fe8")
    tick(server)
    silent = RawClient(port_of(server))
    try:
        with connect(ws_url(server)) as reading:
            silent.send_json({"op": "subscribe", "channels": ["stats:fe8"]})
            subscribe(reading, ["stats:fe8"])
            assert recv(reading)["type"] == "snapshot"
            wait_for_line(server)
            messages, code, reason = read_until_close(silent)
            assert (code, reason) == (4008, b"slow-consumer")
            assert [m["type"] for m in messages[:2]] == ["subscribed", "snapshot"]
            # A client that reads answers the pings and stays: past several ping intervals
            # it still gets the next tick.
            time.sleep(3)
            tick(server)
            assert recv_past_heartbeats(reading)["tick"] == 2
        lines = slow_consumer_lines(server)
        assert len(lines) == 1, lines
        assert "a keepalive ping unanswered for 1 s" in lines[0]
    finally:
        silent.close()


GARBAGE: list[tuple[Any, str, str]] = [
    ("not json", "invalid", "frame"),
    (b"\x00\xff\x10binary", "invalid", "frame"),
    ("[]", "invalid", "frame"),
    ({"op": "subscribe"}, "invalid", "channels"),
    ({"op": "subscribe", "channels": ["stats:fe3"], "from_tick": -5}, "invalid", "from_tick"),
    ({"op": "subscribe", "channels": ["stats:fe3"], "from_tick": 10**9}, "invalid", "from_tick"),
    ({"op": "subscribe", "channels": ["nonsense"]}, "invalid", "channels"),
    ({"op": "subscribe", "channels": ["stats:no-such-island"]}, "unknown-island", ""),
    ({"op": "launch"}, "invalid", "op"),
    ("{" * 10_000, "invalid", "frame"),
]


def test_garbage_frames_get_an_error_and_the_connection_survives(shared_server: Server) -> None:
    server = shared_server
    populate(server, "fe3")
    tick(server)
    logged = len(server.refused_lines())
    with connect(ws_url(server)) as ws:
        for frame, code, field in GARBAGE:
            send(ws, frame)
            error = recv(ws)
            assert (error["type"], error["error"], error.get("field", "")) == (
                "error",
                code,
                field,
            ), frame
        subscribe(ws, ["stats:fe3"])
        snapshot = recv(ws)
        assert snapshot["type"] == "snapshot"
        tick(server)
        update = recv(ws)
        assert (update["type"], update["tick"]) == ("update", snapshot["tick"] + 1)
    # Exactly one `REFUSED reason=<code>` line per refused frame.
    refused = server.refused_lines()[logged:]
    assert [line.split()[1] for line in refused] == [f"reason={code}" for _, code, _ in GARBAGE]


def test_heartbeat_after_five_silent_seconds(shared_server: Server) -> None:
    server = shared_server
    populate(server, "fe4")
    answer = tick(server, island="fe4")
    with connect(ws_url(server)) as ws:
        subscribe(ws, ["stats:fe4"])
        recv(ws)
        beat = recv(ws, timeout=30)  # nothing else is sent while nobody ticks
        assert beat["type"] == "heartbeat"
        assert (
            beat["ticks"]["fe4"]
            == answer["tick"]
            == rest(server, "/api/market/stats", island="fe4")["tick"]
        )
        assert beat["time"].endswith("Z")


@pytest.fixture
def wide_server(start_server: StartServer) -> Server:
    # A small backlog (16 messages, two ticks of the fast client's eight channels); no keepalive
    # ping in the test's time, so the backlog is what closes the slow client.
    return start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "10",
        "--feed-backlog",
        "16",
        "--feed-ping-seconds",
        "600",
    )


def test_a_slow_consumer_is_closed_4008_while_a_fast_one_keeps_receiving(
    wide_server: Server,
) -> None:
    server = wide_server
    # Four islands of 600 idle nodes, their reserve moving: each tick is four ~52 kB ladders
    # (every rung changed) plus stats, so the slow
    # client's socket buffers (some 3 MB on loopback) fill within a few ticks and its backlog
    # right after.
    islands = [f"big{n}" for n in range(4)]
    for island in islands:
        make_island(server, island, nodes=600, reserve=1.0)
    tick(server)
    channels = [f"{feed}:{island}" for island in islands for feed in ("ladder", "stats")]
    slow = RawClient(port_of(server))
    slow.send_json({"op": "subscribe", "channels": channels[:4]})
    slow.send_json({"op": "subscribe", "channels": channels[4:]})
    try:
        with connect(ws_url(server), max_size=None) as fast:
            subscribe(fast, channels)
            assert [recv(fast)["tick"] for _ in channels] == [1] * len(channels)
            for number in range(2, 400):
                # a new reserve moves every rung: each ladder update carries all 600
                for island in islands:
                    body = {"reserve_price": 1 + number / 1000}
                    path = f"/api/admin/islands/{island}"
                    ok(server.client.put(path, json=body, headers=server.operator()))
                tick(server)
                got = [recv(fast) for _ in channels]
                assert {(m["type"], m["tick"]) for m in got} == {("update", number)}
                if slow_consumer_lines(server):
                    break
            lines = slow_consumer_lines(server)
            assert len(lines) == 1, lines
            assert "16 messages held" in lines[0]
            # The slow one reads what was on its way: a gap-free prefix per channel, then 4008.
            messages, code, reason = read_until_close(slow)
            assert (code, reason) == (4008, b"slow-consumer")
            assert Scrape(server.client).value("burstmarket_feed_slow_consumer_closes_total") == 1
            for channel in channels:
                ticks = [m["tick"] for m in messages if m.get("channel") == channel]
                assert ticks == list(range(1, len(ticks) + 1))
                assert len(ticks) < number
            # The fast one is still served; the slow one's close made one line, not more.
            tick(server)
            assert {recv(fast)["tick"] for _ in channels} == {number + 1}
            assert len(slow_consumer_lines(server)) == 1
    finally:
        slow.close()


@pytest.fixture
def minute_server(start_server: StartServer) -> Server:
    """One-minute ticks from 23:50 UTC on 31 January: the sixth tick closes the 23:50 window."""
    return start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "60",
        env={"BURSTMARKET_CLOCK_START": "2026-01-31T23:50:00Z"},
    )


def wait_for(paths: Iterator[Path] | Any, timeout: float = 60) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(paths())
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("nothing appeared")


def test_history_parquet_and_series_while_the_server_runs(minute_server: Server) -> None:
    server = minute_server
    clusters = populate(server, "fe5")
    stats = []
    for n in range(8):  # ticks at 23:51 ... 23:58
        ok(declare(server, clusters[2], 8, 1.5 + n))
        stats.append(tick(server, island="fe5"))
    assert [s["time"] for s in stats][:2] == ["2026-01-31T23:51:00Z", "2026-01-31T23:52:00Z"]
    tree = server.data_dir / "history"
    found = wait_for(lambda: (tree / "ticks" / "island=fe5" / "month=2026-01").glob("*.parquet"))
    assert [p.name for p in found] == ["20260131T235000Z_20260131T235500Z.parquet"]
    for table in ("cluster_rates", "allocations", "ladder"):
        assert list((tree / table / "island=fe5" / "month=2026-01").glob("*.parquet"))
    rows = duckdb.sql(
        f"SELECT island, month, tick, strftime(timezone('UTC', time), '%H:%M'), vwap::DOUBLE,"
        f" min::DOUBLE, max::DOUBLE, gpus, clusters, pending_gpus "
        f"FROM read_parquet('{tree}/ticks/**/*.parquet', hive_partitioning = true) "
        f"WHERE island = 'fe5' ORDER BY tick"
    ).fetchall()
    assert rows == [
        (
            "fe5",
            "2026-01",
            s["tick"],
            s["time"][11:16],
            s["vwap"],
            s["min"],
            s["max"],
            s["gpus"],
            s["clusters"],
            s["pending_gpus"],
        )
        for s in stats[:4]
    ]
    ((paid,),) = duckdb.sql(
        f"SELECT sum(amount_usd)::DOUBLE FROM read_parquet('{tree}/cluster_rates/**/*.parquet',"
        f" hive_partitioning = true) WHERE island = 'fe5'"
    ).fetchall()
    assert paid > 0

    # One-minute candles: one per tick, history and live rows together.
    candles = ok(
        server.client.get("/api/market/series", params={"island": "fe5", "interval": "1m"})
    )
    assert [(c["start"], c["ticks"], c["open"], c["close"]) for c in candles] == [
        (s["time"], 1, s["vwap"], s["vwap"]) for s in stats
    ]
    five = ok(server.client.get("/api/market/series", params={"island": "fe5", "interval": "5m"}))
    assert [(c["start"], c["ticks"]) for c in five] == [
        ("2026-01-31T23:50:00Z", 4),
        ("2026-01-31T23:55:00Z", 4),
    ]
    assert five[0]["open"] == stats[0]["vwap"]
    assert five[0]["close"] == stats[3]["vwap"]
    assert five[0]["high"] == max(s["vwap"] for s in stats[:4])
    assert five[0]["gpu_hours"] == pytest.approx(sum(s["gpus"] for s in stats[:4]) / 60)
    csv = server.client.get(
        "/api/market/series", params={"island": "fe5", "interval": "5m", "format": "csv"}
    )
    assert csv.text.splitlines()[0].startswith("start,open,high,low,close")
    assert len(csv.text.splitlines()) == 3


def test_the_market_endpoints_are_in_openapi_and_the_feed_in_asyncapi(
    shared_server: Server,
) -> None:
    openapi = ok(shared_server.client.get("/schema/openapi.json"))
    for path in ("/api/market/stats", "/api/market/ladder", "/api/market/series"):
        assert "get" in openapi["paths"][path], path
    asyncapi = ok(shared_server.client.get("/schema/asyncapi.json"))
    assert asyncapi["channels"]["market"]["address"] == "/ws/market"
    assert {"heartbeat", "error"} <= set(asyncapi["channels"]["market"]["messages"])
    assert set(asyncapi["channels"]["ladder"]["messages"]) == {"snapshot", "update"}


def test_after_a_restart_the_feed_resumes_from_the_store(
    start_server: StartServer, tmp_path: Path
) -> None:
    data = tmp_path / "kept"
    first = start_server("--clock", "manual", "--tick-seconds", "10", data_dir=data)
    populate(first, "fe6")
    live: list[dict[str, Any]] = []
    with connect(ws_url(first)) as ws:
        tick(first)
        subscribe(ws, ["stats:fe6", "ladder:fe6"])
        snapshots = [recv(ws), recv(ws)]
        for _ in range(3):
            tick(first)
            live += [recv(ws), recv(ws)]
    before = rest(first, "/api/market/stats", island="fe6")
    first.stop()

    second = start_server("--clock", "manual", "--tick-seconds", "10", data_dir=data)
    # Before any new tick: the latest rows come from the store.
    assert rest(second, "/api/market/stats", island="fe6") == before
    with connect(ws_url(second)) as ws:
        subscribe(ws, ["stats:fe6", "ladder:fe6"], from_tick=2)
        got = [recv(ws) for _ in live]
        order = sorted(live, key=lambda m: (m["channel"] != "stats:fe6", m["tick"]))
        assert [(m["channel"], m["tick"]) for m in got] == [
            (m["channel"], m["tick"]) for m in order
        ]
        assert [m for m in got if m["channel"] == "stats:fe6"] == order[:3]
        # the ladder replayed from the store: the same ladders as went out live
        assert ladders(got, "ladder:fe6") == ladders([*snapshots, *live], "ladder:fe6")[1:]
        assert got[-1]["tick"] == before["tick"]
        answer = tick(second, island="fe6")
        assert answer["tick"] == before["tick"] + 1
        assert {recv(ws)["tick"], recv(ws)["tick"]} == {answer["tick"]}
