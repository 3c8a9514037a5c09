"""A real DuckDB file with the market-data tables, a tick writer, and a real feed server.

The writer commits a tick's rows in one transaction, then hands the feed the TickCommitted the
service would send. The server is the feed's own route handlers in a litestar app served by
uvicorn on a loopback port in a background thread (the service's app adds its own routes).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import uvicorn
from litestar import Litestar

from burstmarket.api.errors import HANDLERS
from burstmarket.contract import LadderRungView, LadderView, TickStats
from burstmarket.events import TickCommitted
from burstmarket.feed.feed import Feed, build_feed
from burstmarket.feed.service import FeedOptions
from burstmarket.feed.wire import FeedWebSocketProtocol
from burstmarket.store import Database

START = datetime(2025, 3, 31, 23, 0, tzinfo=UTC)
TICK = timedelta(seconds=10)
SIX = Decimal("0.000001")


def usd(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    tick_seconds: float = TICK.total_seconds()
    bus: str | None = None
    history_live: bool = True


class MarketDB(Database):
    """The service's store in a real DuckDB file (every migration), its market-data tables
    written the way a tick writes them, by the tests alone."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The store's connection, for the tests' own statements (nothing else writes)."""
        return self._con

    def commit(
        self,
        island: str,
        tick: int,
        *,
        holdings: dict[str, tuple[int, str]] | None = None,
        ladder: list[str] | None = None,
        reserve: str = "1.5",
        pending: int = 0,
        gpus_per_node: int = 8,
        start: datetime = START,
    ) -> TickCommitted:
        """One tick: `holdings` is cluster -> (GPUs, rate USD/GPU-h); `ladder` the rung prices."""
        with self._transaction() as cur:
            return self._insert(
                cur, island, tick, holdings, ladder, reserve, pending, gpus_per_node, start
            )

    def commit_many(
        self,
        island: str,
        ticks: range,
        holdings: Callable[[int], dict[str, tuple[int, str]]],
        ladder: list[str],
    ) -> None:
        """The rows `commit` writes for each of `ticks` (`holdings(tick)` held), in one
        transaction: the history's tests write hundreds of ticks."""
        with self._transaction() as cur:
            for tick in ticks:
                self._insert(cur, island, tick, holdings(tick), ladder, "1.5", 0, 8, START)

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self.con.cursor()
        try:
            cur.execute("BEGIN TRANSACTION")
            yield cur
            cur.execute("COMMIT")
        finally:
            cur.close()

    def _insert(
        self,
        cur: duckdb.DuckDBPyConnection,
        island: str,
        tick: int,
        holdings: dict[str, tuple[int, str]] | None,
        ladder: list[str] | None,
        reserve: str,
        pending: int,
        gpus_per_node: int,
        start: datetime,
    ) -> TickCommitted:
        when = start + TICK * (tick - 1)
        holdings = holdings or {}
        rates = {name: Decimal(rate) for name, (_, rate) in holdings.items()}
        gpus = sum(g for g, _ in holdings.values())
        vwap = (
            (sum(rates[n] * g for n, (g, _) in holdings.items()) / gpus).quantize(SIX)
            if gpus
            else None
        )
        low = min(rates.values()) if rates else None
        high = max(rates.values()) if rates else None
        prices = [Decimal(p) for p in ladder or []]
        cur.execute(
            "INSERT INTO ticks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                island,
                tick,
                when,
                vwap,
                low,
                high,
                gpus,
                len(holdings),
                pending,
                Decimal(reserve),
                Decimal(TICK.total_seconds()),
                1,
                True,
            ],
        )
        for name, (held, _) in holdings.items():
            amount = (rates[name] * held * Decimal(TICK.total_seconds()) / 3600).quantize(SIX)
            cur.execute(
                "INSERT INTO cluster_rates VALUES (?, ?, ?, ?, ?, ?, ?)",
                [island, tick, when, name, held, rates[name], amount],
            )
            # one statement per table and cluster: the tests write thousands of ticks
            cur.execute(
                "INSERT INTO allocations SELECT ?, ?, ?, ?, concat(?, '-n', i), 'market' "
                "FROM range(?) AS r(i)",
                [island, tick, when, name, name, held // gpus_per_node],
            )
        if prices:
            cur.execute(
                "INSERT INTO ladder SELECT ?, ?, ?, n, n * ?, price, NULL, [] "
                "FROM (SELECT unnest(range(1, ? + 1)) AS n, unnest(?::DECIMAL(18, 6)[]) AS price)",
                [island, tick, when, gpus_per_node, len(prices), prices],
            )
        stats = TickStats(
            island=island,
            tick=tick,
            time=when,
            vwap=usd(vwap),
            min=usd(low),
            max=usd(high),
            gpus=gpus,
            clusters=len(holdings),
            pending_gpus=pending,
            reserve_price=float(Decimal(reserve)),
        )
        rungs = [
            LadderRungView(
                nodes=n,
                gpus=n * gpus_per_node,
                price_per_gpu_hour=float(p),
                contestable_at=None,
                reason=None,
                later=[],
            )
            for n, p in enumerate(prices, start=1)
        ]
        return TickCommitted(
            island=island,
            tick=tick,
            time=when,
            stats=stats,
            ladder=LadderView(
                island=island,
                tick=tick,
                time=when,
                reserve_price=float(Decimal(reserve)),
                rungs=rungs,
            ),
        )


def two_clusters(tick: int) -> dict[str, tuple[int, str]]:
    """Holdings for `MarketDB.commit_many` that move from tick to tick: `a` holds 8 to 24 GPUs
    at rates from 2.00 to 2.04, `b` 8 GPUs at 3.0001."""
    return {"a": (8 * (tick % 3 + 1), f"{2 + tick % 5 / 100:.4f}"), "b": (8, "3.0001")}


def backfill(db: MarketDB, island: str, ticks: range, vwap: str = "2.5") -> None:
    """Many quiet ticks at once (one cluster of 8 GPUs at `vwap`), `ticks` rows only."""
    db.con.execute(
        """
        INSERT INTO ticks
        SELECT $island, t, $start + (t - 1) * INTERVAL 10 SECOND, $vwap, $vwap, $vwap, 8, 1, 0,
               1.5, 10, 1, true
        FROM range($first, $stop) AS r(t)
        """,
        {
            "island": island,
            "start": START,
            "vwap": Decimal(vwap),
            "first": ticks.start,
            "stop": ticks.stop,
        },
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FeedServer:
    """The feed's routes served by uvicorn on a loopback port, in a background thread."""

    def __init__(
        self,
        db: MarketDB,
        data_dir: Path,
        options: FeedOptions | None = None,
        ws: type[asyncio.Protocol] = FeedWebSocketProtocol,
    ) -> None:
        self.db = db
        self.settings = Settings(data_dir)
        self.feed: Feed = build_feed(db, self.settings, options)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws/market"

        async def started() -> None:
            self.loop = asyncio.get_running_loop()
            await self.feed.start()

        app = Litestar(
            route_handlers=self.feed.route_handlers,
            on_startup=[started],
            on_shutdown=[self.feed.stop],
            exception_handlers=HANDLERS,  # the service's own: refusals as the contract says
        )
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            ws=ws,
            ws_per_message_deflate=False,
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> FeedServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)

    def publish(self, event: TickCommitted) -> None:
        """Hand the committed tick to the feed on the server's loop, as the service does."""
        assert self.loop is not None

        async def deliver() -> None:
            self.feed.on_tick(event)

        asyncio.run_coroutine_threadsafe(deliver(), self.loop).result(timeout=10)

    def tick(self, island: str, tick: int, **rows: Any) -> TickCommitted:
        event = self.db.commit(island, tick, **rows)
        self.publish(event)
        return event


class RawClient:
    """A websocket client on a bare socket with a tiny receive buffer, that reads only when
    told to: the slow consumer no client library lets you be."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            "GET /ws/market HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(4096)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def send_json(self, message: Any) -> None:
        payload = json.dumps(message).encode()
        assert len(payload) < 126
        mask = os.urandom(4)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed without a close frame"
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def frame(self) -> tuple[int, bytes]:
        """The next (opcode, payload); server frames are unmasked and unfragmented here."""
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(self._read(2), "big")
        elif length == 127:
            length = int.from_bytes(self._read(8), "big")
        return first & 0x0F, self._read(length)

    def close(self) -> None:
        self.sock.close()
