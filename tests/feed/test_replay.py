"""`burstmarket replay` (docs/feed.md "Replay"): a period recorded by a live server, served again
from its Parquet history alone, message for message as the live feed sent it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from websockets.sync.client import ClientConnection, connect

from tests.conftest import Server, StartServer, run_in_process
from tests.e2e.feed_client import recv_past_heartbeats, send, ws_url
from tests.e2e.support import declare, eventually, make_account, make_cluster, make_island, ok
from tests.e2e.support import tick as run_tick

ISLAND = "rp"
CHANNELS = [f"ladder:{ISLAND}", f"rates:{ISLAND}", f"stats:{ISLAND}"]
TICKS = 12
"""Live ticks, one a minute from 23:51 on 31 January: ticks 1-9 (23:51 ... 23:59) are in closed
five-minute windows, so the history holds them (a day and a month closed: merged files too)."""
RECORDED = 9


def receive(ws: ClientConnection, count: int) -> list[dict[str, Any]]:
    """The next `count` messages of the channels (heartbeats are about the connection)."""
    return [recv_past_heartbeats(ws) for _ in range(count)]


def subscribed(ws: ClientConnection, **extra: Any) -> None:
    send(ws, {"op": "subscribe", "channels": CHANNELS, **extra})
    assert recv_past_heartbeats(ws) == {"type": "subscribed", "channels": CHANNELS}


def by_channel(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {channel: [] for channel in CHANNELS}
    for message in messages:
        found[message["channel"]].append(message)
    return found


def recorded_through(history: Path) -> int:
    """The last tick of the island the history holds (0 while none, or mid-compaction)."""
    try:
        ((last,),) = duckdb.sql(
            f"SELECT coalesce(max(tick), 0) FROM read_parquet('{history}/ticks/**/*.parquet')"
        ).fetchall()
    except duckdb.Error:
        return 0
    return int(last)


@pytest.fixture
def recorded(start_server: StartServer) -> tuple[Path, dict[str, list[dict[str, Any]]], Any]:
    """A live period: its history directory, every message a live subscriber got from tick 1
    (by channel), and what a live `from_tick: 3` subscriber got."""
    live = start_server(
        "--clock",
        "manual",
        "--tick-seconds",
        "60",
        env={"BURSTMARKET_CLOCK_START": "2026-01-31T23:50:00Z"},
    )
    make_island(live, ISLAND, nodes=4, reserve=1.0)
    make_account(live, "rp-acct", balance=100_000)
    clusters = [make_cluster(live, "rp-acct", ISLAND, "vm", f"rp-{n}") for n in "abc"]
    for auth, gpus, price in zip(clusters, (16, 16, 8), (3.5, 2.75, 1.5), strict=True):
        ok(declare(live, auth, gpus, price))
    run_tick(live, island=ISLAND)
    with connect(ws_url(live)) as ws:
        subscribed(ws)
        for n in range(2, TICKS + 1):
            # demand that moves: the rates, the pending GPUs and the ladder's rungs change
            ok(declare(live, clusters[n % 3], 8 * (1 + n % 3), 1.5 + n / 4))
            run_tick(live, island=ISLAND)
        messages = receive(ws, len(CHANNELS) * TICKS)
    with connect(ws_url(live)) as ws:
        subscribed(ws, from_tick=3)
        from_three = receive(ws, len(CHANNELS) * (TICKS - 2))
    history = live.data_dir / "history"
    eventually(lambda: recorded_through(history) >= RECORDED, "the history of tick 9", live)
    live.stop()
    return history, by_channel(messages), by_channel(from_three)


def replay(start_server: StartServer, history: Path, *flags: str) -> Server:
    return start_server("--history", str(history), *flags, subcommand="replay")


def test_replay_sends_the_recorded_ticks_as_the_live_feed_sent_them(
    start_server: StartServer, recorded: tuple[Path, dict[str, Any], dict[str, Any]]
) -> None:
    history, live, live_from_three = recorded
    assert recorded_through(history) == RECORDED  # the ticks of the open window are not history
    server = replay(start_server, history, "--speed", "max")
    with connect(ws_url(server)) as ws:
        subscribed(ws)
        replayed = by_channel(receive(ws, len(CHANNELS) * RECORDED))
    for channel in CHANNELS:
        # the snapshot of tick 1, then every update (the ladder's as its changes), in order
        assert [m["tick"] for m in replayed[channel]] == list(range(1, RECORDED + 1))
        assert replayed[channel] == live[channel][:RECORDED]
    assert any(m["data"]["changed"] for m in replayed[f"ladder:{ISLAND}"][1:])
    assert any(m["data"]["rates"] for m in replayed[f"rates:{ISLAND}"])

    # from_tick: the recorded ticks from there, the first ladder whole, as the live replay
    with connect(ws_url(server)) as ws:
        subscribed(ws, from_tick=3)
        again = by_channel(receive(ws, len(CHANNELS) * (RECORDED - 2)))
    for channel in CHANNELS:
        assert [m["tick"] for m in again[channel]] == list(range(3, RECORDED + 1))
        assert again[channel] == live_from_three[channel][: RECORDED - 2]


def test_replay_refuses_as_the_live_feed_does(
    start_server: StartServer, recorded: tuple[Path, dict[str, Any], dict[str, Any]]
) -> None:
    history, _, _ = recorded
    server = replay(start_server, history, "--speed", "1")  # a tick a minute: tick 1 for now
    with connect(ws_url(server)) as ws:
        send(ws, {"op": "subscribe", "channels": [f"stats:{ISLAND}"], "from_tick": 5, "id": 1})
        refused = recv_past_heartbeats(ws)
        assert (refused["type"], refused["error"], refused["field"], refused["next_tick"]) == (
            "error",
            "invalid",
            "from_tick",
            2,
        )
        send(ws, {"op": "subscribe", "channels": ["stats:nowhere"]})
        assert recv_past_heartbeats(ws)["error"] == "unknown-island"
        send(ws, {"op": "auth", "token": "bm_anything"})
        refused_auth = recv_past_heartbeats(ws)
        assert (refused_auth["type"], refused_auth["error"]) == ("error", "forbidden")
        assert "replay serves the public channels only" in refused_auth["detail"]
    body = ok(server.client.get("/api/market/stats", params={"island": ISLAND}))
    assert body["tick"] == 1
    lines = server.refused_lines()
    assert len(lines) == 3, lines
    assert [line.split()[1] for line in lines] == [
        "reason=invalid",
        "reason=unknown-island",
        "reason=forbidden",
    ]


@pytest.mark.parametrize(
    ("flags", "code", "says"),
    [
        (("--speed", "0"), 2, "--speed"),
        (("--speed", "fast"), 2, "--speed"),
        (("--islands", "nowhere"), 1, "no history of island nowhere"),
        (("--start", "2030-01-01", "--end", "2030-01-02"), 1, "nothing to replay"),
        (("--start", "2030-01-02", "--end", "2030-01-01"), 2, "--end"),
    ],
)
def test_replay_refuses_what_it_cannot_serve(
    tmp_path: Path, flags: tuple[str, ...], code: int, says: str
) -> None:
    history = tmp_path / "history"
    folder = history / "ticks" / f"island={ISLAND}" / "month=2026-01"
    folder.mkdir(parents=True)
    duckdb.sql(
        "COPY (SELECT 1::BIGINT AS tick, TIMESTAMPTZ '2026-01-31 23:51:00+00' AS time) "
        f"TO '{folder}/20260131T235000Z_20260131T235500Z.parquet' (FORMAT parquet)"
    )
    ran = run_in_process("replay", "--history", str(history), *flags)
    assert ran.returncode == code, ran
    (line,) = ran.stderr.strip().splitlines()
    assert line.startswith("burstmarket replay: "), line
    assert says in line, line
    assert ran.stdout == ""
