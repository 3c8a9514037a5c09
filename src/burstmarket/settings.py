"""One frozen Settings for the service, read once at start (flags + environment).

Nothing else in the package reads `os.environ`: the CLI builds a Settings and hands it down.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

ClockMode = Literal["real", "manual"]
LogFormat = Literal["text", "json"]

OPERATOR_TOKEN_ENV = "BURSTMARKET_OPERATOR_TOKEN"  # noqa: S105 (a variable name)
CLOCK_START_ENV = "BURSTMARKET_CLOCK_START"
BUS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True, slots=True)
class IslandSpec:
    """An island as configured (the operator's `PUT /api/admin/islands/{id}` makes others)."""

    id: str
    gpus_per_node: int
    nodes: int
    reserve_price: int
    """µUSD per GPU-hour."""
    node_spec: str | None
    """What one node is, as JSON (shown to tenants as it is)."""


REFERENCE_ISLAND = IslandSpec(
    id="ref",
    gpus_per_node=8,
    nodes=64,
    reserve_price=1_000_000,
    node_spec=json.dumps(
        {
            "cpu": "240 vCPUs, AMD EPYC (Turin)",
            "gpus": "8x AMD MI355X 288 GB OAM",
            "memory": "3 TB RAM",
            "storage": "8x 3.84 TB NVMe",
            "network": "3200 Gbps scale-out, fully interconnected, on-site scalable NFS",
        }
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    clock: ClockMode = "real"
    """`real`: APScheduler ticks every `tick_seconds`; `manual`: only `POST /api/admin/ticks`."""
    data_dir: Path = Path("data")
    """Holds `market.duckdb` and the Parquet history; created if missing."""
    host: str = "127.0.0.1"
    port: int = 8000
    tick_seconds: float = 10.0
    """Market time between two ticks of one island (also the billing interval of a tick)."""
    operator_token: str | None = None
    """From BURSTMARKET_OPERATOR_TOKEN; without it the operator endpoints are closed."""
    clock_start: datetime | None = None
    """Manual clock only: market time of a new data dir (BURSTMARKET_CLOCK_START, RFC 3339);
    tests use it to put the market just before midnight. Default: the wall clock at start. A
    data dir that holds market time resumes from it and ignores this (docs/market.md "Time")."""
    rate_per_second: float = 50.0
    """Requests per second each cluster token may sustain (`--rate-limit`; 0 turns the limit
    off); past it, `rate-limited` (429) with Retry-After. The operator token has no limit."""
    rate_burst: int = 200
    """Requests a cluster token may make at once above `rate_per_second` (`--rate-burst`)."""
    max_body_bytes: int = 1_048_576
    """Largest request body accepted; a larger one is refused `too-large` (413)."""
    feed_backlog: int = 256
    """Messages the feed holds for one websocket subscriber (`--feed-backlog`); one more and it
    is closed 4008 `slow-consumer` (docs/api.md "Slow consumers and the replay budget")."""
    feed_ping_seconds: float = 20.0
    """Websocket keepalive (`--feed-ping-seconds`): a ping this often; a client that leaves one
    unanswered this long has stopped reading and is closed 4008 `slow-consumer`."""
    header_timeout_seconds: float = 10.0
    """Seconds a client has to send a request's headers (`--header-timeout`): past it, a
    request begun is refused `request-timeout` (408) and a connection that sent nothing is
    closed (connections.py; docs/api.md "Slow clients and connections per address")."""
    connections_per_address: int = 256
    """Connections one peer address may hold open at once, HTTP and websocket alike
    (`--connections-per-address`, 0: no limit); the next is refused `too-many-connections`
    (429) at accept."""
    first_island: IslandSpec | None = REFERENCE_ISLAND
    """The island a new store starts with (a store that has islands keeps its own); None: a
    new store starts with none."""
    log_format: LogFormat = "text"
    """`text`: `TIME LEVEL LOGGER: MESSAGE` lines; `json`: one JSON object a line
    (`--log-format`, logsafe.py)."""
    cors_origins: tuple[str, ...] = ("*",)
    """Web origins whose pages may read the public market data (`--cors-origins`,
    comma-separated; `*` any; none: no CORS). The tenant and operator endpoints are never
    opened to them."""
    bus: str | None = None
    """`--bus redis://HOST:PORT/DB`: the feed is published to Redis too, for the feed edges
    (feed/bus.py); None: the in-process feed alone, the embedded default."""
    islands: tuple[str, ...] | None = None
    """`--islands a,b`: the only islands this process ticks and serves (each leased on the bus,
    lease.py); None: every island of its store."""
    lease_seconds: float = 10.0
    """`--lease-seconds`: how long an island's lease outlives its owner's last renewal."""
    checkpoint_mib: float = 16.0
    """`--checkpoint-mib`: the store checkpoints once its write-ahead log has grown past this
    (store/database.py; a failed checkpoint, a full disk, reopens the store)."""
    history_live: bool = True
    """Write each closed window to the Parquet history as the ticks go. `simulate` turns it off
    and writes its history once, at its end: a part per island, table and day, the layout the
    live export reaches once it has compacted the closed days."""

    @property
    def database_path(self) -> Path:
        return self.data_dir / "market.duckdb"

    @property
    def checkpoint_bytes(self) -> int:
        return round(self.checkpoint_mib * 1024 * 1024)

    @property
    def tick_ms(self) -> int:
        return round(self.tick_seconds * 1000)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **flags: object) -> Settings:
        """Settings from command-line flags plus the two environment variables."""
        env = os.environ if env is None else env
        start = env.get(CLOCK_START_ENV) or None
        clock_start = None
        if start is not None:
            clock_start = datetime.fromisoformat(start)
            if clock_start.tzinfo is None:
                clock_start = clock_start.replace(tzinfo=UTC)
        settings = cls(
            operator_token=env.get(OPERATOR_TOKEN_ENV) or None,
            clock_start=clock_start,
            **flags,  # type: ignore[arg-type]
        )
        if settings.tick_ms < 1:
            raise ValueError("tick-seconds must be at least 0.001")
        if settings.rate_per_second < 0 or settings.rate_burst < 1:
            raise ValueError("the rate limit must be at least 0 and the burst at least 1")
        if settings.feed_backlog < 1 or settings.feed_ping_seconds <= 0:
            raise ValueError("the feed backlog must be at least 1 and the ping interval above 0")
        if settings.header_timeout_seconds <= 0 or settings.connections_per_address < 0:
            raise ValueError(
                "the header timeout must be above 0 and the connections per address at least 0"
            )
        if settings.bus is not None and not settings.bus.startswith(BUS_SCHEMES):
            raise ValueError(f"--bus must be a Redis URL ({', '.join(BUS_SCHEMES)}…)")
        if settings.islands is not None:
            if settings.bus is None:
                raise ValueError("--islands needs --bus: the islands' leases are kept there")
            if not settings.islands:
                raise ValueError("--islands names no island")
            first = settings.first_island
            if first is not None and first.id not in settings.islands:
                settings = replace(settings, first_island=None)
        if settings.lease_seconds <= 0:
            raise ValueError("--lease-seconds must be above 0")
        return settings
