"""What the replay-flood tests share (test_feed_flood.py, test_feed_flood_pace.py): ten
connections each subscribing 200 times to every channel of an island with `from_tick` at the
start of a 300-tick replay window, the server's memory and CPU read from /proc, and a
well-behaved subscriber timing the ticks."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from websockets.sync.client import connect

from tests.conftest import Server, StartServer
from tests.e2e.support import declare, make_account, make_cluster, make_island, ok, tick

TICK_SECONDS = 0.1
PAST_TICKS = 300
CONNECTIONS = 10
SUBSCRIBES = 200
CHANNELS = ["stats:flood", "ladder:flood", "rates:flood"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class TickWatch:
    """A well-behaved subscriber to stats:flood, noting the market time of every tick (the real
    clock: market time is wall time) to measure how late ticks run."""

    def __init__(self, server: Server) -> None:
        self.times: list[tuple[float, int]] = []  # (when received, tick)
        self._stop = threading.Event()
        self._url = server.url.replace("http://", "ws://") + "/ws/market"
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with connect(self._url) as ws:
            ws.send(json.dumps({"op": "subscribe", "channels": ["stats:flood"]}))
            while not self._stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                if message["type"] == "update":
                    self.times.append((time.monotonic(), message["tick"]))

    def worst_gap(self, start: float, end: float) -> float:
        """The longest wait between two ticks seen in [start, end]."""
        seen = [at for at, _ in self.times if start <= at <= end]
        return max((b - a for a, b in itertools.pairwise(seen)), default=end - start)

    def ticks(self, start: float, end: float) -> int:
        return sum(1 for at, _ in self.times if start <= at <= end)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def served_with_a_replay_window(start_server: StartServer, clock: str = "real") -> Server:
    """A store with a replay window of 300 ticks: made fast on the manual clock, from two
    minutes ago, then served on `clock` (the real one carries on from there)."""
    started = datetime.now(UTC) - timedelta(seconds=PAST_TICKS * TICK_SECONDS + 60)
    flags = ("--tick-seconds", str(TICK_SECONDS))
    maker = start_server(
        "--clock", "manual", *flags, env={"BURSTMARKET_CLOCK_START": started.isoformat()}
    )
    make_island(maker, "flood", nodes=6)
    make_account(maker, "flood-acct", balance=1_000_000)
    for n, price in enumerate((3.5, 2.5, 1.8, 1.2)):
        auth = make_cluster(maker, "flood-acct", "flood", "vm", f"flood-{n}")
        ok(declare(maker, auth, 16, price))
    for _ in range(PAST_TICKS // 50):
        tick(maker, 50)
    maker.stop()
    return start_server("--clock", clock, *flags, data_dir=maker.data_dir)


def port_of(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])
