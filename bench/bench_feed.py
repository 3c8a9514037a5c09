"""Market-data speed: websocket fan-out, latest-row endpoints, the hourly series. Prints figures.

    .venv/bin/python bench/bench_feed.py            # all three
    .venv/bin/python bench/bench_feed.py fanout     # or one: fanout | rest | series

The server is one uvicorn process serving the feed's own routes over a real DuckDB file, plus a
bench-only `POST /bench/tick` that commits a tick's rows (as the service's tick does) and then
calls `on_tick`; it answers with the wall-clock time of the commit. Subscribers are minimal
asyncio websocket clients in this process (parsing frames, no JSON), so the client side costs
as little as possible on a shared machine. Latency = arrival of a tick's update at the LAST
subscriber minus the commit time.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- the server process ------------------------------------------------------------------------


def serve(port: int, data_dir: Path) -> None:
    import uvicorn
    from litestar import Litestar, post
    from tests.feed.support import MarketDB, Settings

    from burstmarket.feed import build_feed

    db = MarketDB(data_dir / "market.duckdb")
    feed = build_feed(db, Settings(data_dir))
    state = {"tick": 0}
    holdings = {f"c{i:03d}": (8 * (1 + i % 4), f"{2 + i / 1000:.4f}") for i in range(200)}
    ladder = [f"{2 + n / 1000:.4f}" for n in range(64)]

    @post("/bench/tick", sync_to_thread=False)
    def tick() -> dict[str, Any]:
        state["tick"] += 1
        event = db.commit("bench", state["tick"], holdings=holdings, ladder=ladder)
        committed = time.time()
        feed.on_tick(event)
        return {"tick": state["tick"], "committed_at": committed}

    app = Litestar(route_handlers=[*feed.route_handlers, tick],
                   on_startup=[feed.start], on_shutdown=[feed.stop])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning",
                ws="websockets-sansio", ws_per_message_deflate=False, backlog=8192)


class Server:
    def __init__(self) -> None:
        from tests.feed.support import free_port

        self.dir = tempfile.TemporaryDirectory()
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", str(self.port), self.dir.name])

    async def wait(self) -> None:
        for _ in range(500):
            try:
                await http(self.port, "GET", "/schema/asyncapi.json")
                return
            except OSError:
                await asyncio.sleep(0.02)
        raise RuntimeError("server did not start")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.dir.cleanup()


async def http(port: int, method: str, path: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    return data.split(b"\r\n\r\n", 1)[1]


# -- websocket fan-out -------------------------------------------------------------------------


class Subscriber(asyncio.Protocol):
    """Handshake, subscribe, then note when each update frame is complete."""

    def __init__(self, arrivals: dict[int, list[float]], ready: asyncio.Future[None]) -> None:
        self.transport: asyncio.Transport | None = None
        self.arrivals = arrivals
        self.ready = ready
        self.buffer = b""
        self.upgraded = False
        self.frames = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(upgrade())  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.upgraded:
            if b"\r\n\r\n" not in self.buffer:
                return
            self.buffer = self.buffer.split(b"\r\n\r\n", 1)[1]
            self.upgraded = True
            assert self.transport is not None
            self.transport.write(SUBSCRIBE)
        while len(self.buffer) >= 2:
            length, offset = self.buffer[1] & 0x7F, 2
            if length == 126:
                length, offset = int.from_bytes(self.buffer[2:4], "big"), 4
            elif length == 127:
                length, offset = int.from_bytes(self.buffer[2:10], "big"), 10
            if len(self.buffer) < offset + length:
                return
            payload = self.buffer[offset:offset + length]
            self.buffer = self.buffer[offset + length:]
            self.frames += 1
            if payload.startswith(b'{"type":"update"'):
                tick = int(payload.split(b'"tick":', 1)[1].split(b",", 1)[0])
                self.arrivals.setdefault(tick, []).append(time.time())
            elif payload.startswith(b'{"type":"snapshot"') and not self.ready.done():
                self.ready.set_result(None)


def upgrade() -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET /ws/market HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()


def masked_text(payload: bytes) -> bytes:
    mask = os.urandom(4)
    return bytes([0x81, 0x80 | len(payload)]) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload))


SUBSCRIBE = masked_text(b'{"op":"subscribe","channels":["stats:bench"]}')


async def fanout(subscribers: int, ticks: int = 30) -> None:
    server = Server()
    try:
        await server.wait()
        await http(server.port, "POST", "/bench/tick")
        loop = asyncio.get_running_loop()
        arrivals: dict[int, list[float]] = {}
        readies = []
        for start in range(0, subscribers, 200):
            batch = []
            for _ in range(start, min(subscribers, start + 200)):
                ready: asyncio.Future[None] = loop.create_future()
                await loop.create_connection(
                    lambda ready=ready: Subscriber(arrivals, ready), "127.0.0.1", server.port)
                batch.append(ready)
            await asyncio.gather(*batch)
            readies += batch
        last, every = [], []
        for _ in range(ticks):
            answer = json.loads(await http(server.port, "POST", "/bench/tick"))
            tick, committed = answer["tick"], answer["committed_at"]
            deadline = loop.time() + 10
            # Polling: arrivals are written by protocol callbacks, not by a task to await.
            while len(arrivals.get(tick, ())) < subscribers and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.001)
            times = arrivals.pop(tick, [])
            if len(times) < subscribers:
                print(f"tick {tick}: only {len(times)} of {subscribers} got it within 10 s")
                continue
            last.append((max(times) - committed) * 1000)
            every += [(t - committed) * 1000 for t in times]
            await asyncio.sleep(0.05)
        print(f"fanout {subscribers:>5} subscribers, {ticks} ticks: commit -> last subscriber "
              f"p50 {percentile(last, 0.5):6.1f} ms  p99 {percentile(last, 0.99):6.1f} ms   "
              f"(every delivery p50 {percentile(every, 0.5):.1f} ms, "
              f"p99 {percentile(every, 0.99):.1f} ms)")
    finally:
        server.close()


# -- latest-row endpoints ----------------------------------------------------------------------


async def rest(rate: int = 2000, seconds: float = 5.0, connections: int = 32) -> None:
    server = Server()
    try:
        await server.wait()
        await http(server.port, "POST", "/bench/tick")
        paths = ["/api/market/stats?island=bench", "/api/market/ladder?island=bench&max_nodes=8"]
        latencies: list[float] = []
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.2
        total = int(rate * seconds)

        async def worker(index: int) -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            for n in range(index, total, connections):
                due = start + n / rate  # open loop: requests leave on schedule
                await asyncio.sleep(max(0.0, due - loop.time()))
                sent = loop.time()
                writer.write(f"GET {paths[n % 2]} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                # From when it was due: waiting behind a slow server counts.
                latencies.append((loop.time() - min(sent, due)) * 1000)
            writer.close()

        began = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(connections)))
        took = time.perf_counter() - began
        print(f"rest stats+ladder: {len(latencies)} requests in {took:.1f} s "
              f"({len(latencies) / took:.0f}/s offered {rate}/s): p50 "
              f"{percentile(latencies, 0.5):.2f} ms  p99 {percentile(latencies, 0.99):.2f} ms")
    finally:
        server.close()


# -- the hourly series over 30 days ------------------------------------------------------------


def series_bench() -> None:
    from tests.feed.support import MarketDB

    from burstmarket.feed import series
    from burstmarket.history import HistoryExporter
    from burstmarket.history.store import StoreReader

    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        db = MarketDB(data / "market.duckdb")
        end = datetime(2025, 3, 31, tzinfo=UTC)
        start = end - timedelta(days=30)
        # 30 days of 10 s ticks; each tick's stats are those of 200 clusters with drifting rates.
        db.con.execute(
            """
            INSERT INTO ticks
            WITH t AS (SELECT range AS tick FROM range(1, 259201)),
                 c AS (SELECT range AS cluster FROM range(200)),
                 r AS (SELECT tick, 8 * (1 + cluster % 4) AS gpus,
                              2 + ((tick // 360 + cluster * 7) % 100) / 100 AS rate
                       FROM t, c)
            SELECT 'bench', tick, $start + (tick - 1) * INTERVAL 10 SECOND,
                   (sum(rate * gpus) / sum(gpus))::DECIMAL(18, 6), min(rate), max(rate),
                   sum(gpus), 200, 0, 1.5
            FROM r GROUP BY tick
            """,
            {"start": start},
        )
        began = time.perf_counter()
        HistoryExporter(db, data / "history").run()
        exported = time.perf_counter() - began
        # The live table keeps the last hour; the rest is read from Parquet.
        db.con.execute("DELETE FROM ticks WHERE time < $cut", {"cut": end - timedelta(hours=1)})
        files = sorted(p.name for p in (data / "history" / "ticks").rglob("*.parquet"))
        query = series.SeriesQuery.parse(
            {"interval": "1h", "start": start.isoformat(), "end": end.isoformat(),
             "limit": "1000"}, "bench", end)
        runs = []
        for _ in range(7):
            began = time.perf_counter()
            table = series.candles(StoreReader(db), data / "history", query, 10.0)
            body = series.render(table, "json")
            runs.append((time.perf_counter() - began) * 1000)
        print(f"series 1h over 30 days (259,200 ticks, 200 clusters): {table.num_rows} candles, "
              f"{len(body)} bytes JSON, median {statistics.median(runs):.0f} ms, "
              f"max {max(runs):.0f} ms; history export {exported:.1f} s into {len(files)} "
              f"ticks file(s)")


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]), Path(sys.argv[3]))
        return
    which = sys.argv[1:] or ["fanout", "rest", "series"]
    if "fanout" in which:
        asyncio.run(fanout(1000))
        asyncio.run(fanout(5000))
    if "rest" in which:
        asyncio.run(rest())
    if "series" in which:
        series_bench()


if __name__ == "__main__":
    main()
