"""`burstmarket simulate`: days of market history as fast as the machine allows.

The service's own app runs in this process on the manual clock, with its real engine, store
and feed; the simulated tenants reach it through `httpx.ASGITransport` (the same client and
the same HTTP handlers as over a socket, without the socket) and tick it back to back, never
sleeping. At the end the service's history exporter writes the whole run to Parquet at once,
not window by window as the ticks go, so `<out>/history/<table>/**/*.parquet` is what the
service itself would have written once it had compacted the closed days.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from burstmarket import logsafe
from burstmarket.api.app import create_app
from burstmarket.client import OperatorClient, TickReport
from burstmarket.history import HistoryExporter
from burstmarket.settings import Settings
from burstmarket.simulation.pace import Driven, run
from burstmarket.simulation.world import World
from burstmarket.store import Database

BASE_URL = "http://simulation"
"""Only a name: requests never leave the process."""
LOG_FILE = "simulate.log"


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    out: Path
    """The data dir: `market.duckdb`, `history/` and the log; an existing one is continued."""
    days: float
    tick_seconds: float = 1800.0
    """Market time between ticks: 30 minutes keeps a day to 48 ticks per island (a tick costs
    the store about 0.1 s per island, so shorter ticks make a day take minutes)."""
    seed: int = 1


def ticks_for(options: SimulateOptions) -> int:
    return max(1, round(options.days * 86_400 / options.tick_seconds))


async def simulate(
    options: SimulateOptions, on_tick: Callable[[TickReport], None] | None = None
) -> datetime:
    """Run the simulation; the market time its history is complete up to (the end of the last
    tick's interval)."""
    out = options.out
    out.mkdir(parents=True, exist_ok=True)
    _log_to(out / LOG_FILE)
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    token = secrets.token_urlsafe(24)
    interval = timedelta(seconds=options.tick_seconds)
    settings = Settings(
        clock="manual",
        data_dir=out,
        tick_seconds=options.tick_seconds,
        operator_token=token,
        # An empty store's first tick is `days` before today's midnight (a tick moves the clock
        # one interval on, then runs), so its last tick bills up to midnight: whole days, from
        # midnight to midnight, at 30-minute ticks 48 per island each. A used one carries on.
        clock_start=midnight - timedelta(days=options.days) - interval,
        history_live=False,  # written once, at the end (`export_history`)
    )
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with app.lifespan(), httpx.AsyncClient(transport=transport, timeout=300) as http:
        world = World(
            BASE_URL, token, out, http=http, seed=options.seed, reconsider=timedelta(minutes=45)
        )
        pace = Driven(OperatorClient(BASE_URL, token, http=http), options.tick_seconds, 0, on_tick)
        # the first tick opens the span: `ticks_for` ticks in all
        reached = await run(world, pace, interval * (ticks_for(options) - 1))
    # the last tick billed [reached, reached + interval): market time is complete up to there
    export_history(settings, through=reached + interval)
    return reached + interval


def export_history(settings: Settings, through: datetime) -> None:
    """Write every window not in the history yet, up to `through` (the app is closed, so no
    tick is still to come): the whole run, or what a continued data dir adds."""
    db = Database(settings.database_path)
    try:
        HistoryExporter(db, settings.data_dir / "history").run(through)
    finally:
        db.close()


def _log_to(path: Path) -> None:
    """The service's log lines (refusals, exports) go to a file, not over the progress bar."""
    logsafe.configure("text", logging.FileHandler(path))
    logging.getLogger("httpx").setLevel(logging.WARNING)
