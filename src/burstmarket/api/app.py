"""The litestar app factory: store, clock, market, tick loop, routes and the feed's plug-in."""

from __future__ import annotations

import gc
import mimetypes
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
from litestar import Litestar, MediaType, Response, get
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.types import ControllerRouterHandler

from burstmarket import __version__
from burstmarket.api import operator, tenant
from burstmarket.api.errors import HANDLERS
from burstmarket.api.ratelimit import RateLimits
from burstmarket.api.services import Services
from burstmarket.clock import NS_PER_MS, Clock, ManualClock, SystemClock, from_datetime
from burstmarket.errors import NotFound
from burstmarket.feed import build_feed
from burstmarket.history import dictionary
from burstmarket.market.operator import Operator
from burstmarket.market.service import Market
from burstmarket.market.tenant import Tenant
from burstmarket.scheduler import TickScheduler
from burstmarket.settings import Settings
from burstmarket.store import Database

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The dashboard's page, script and styles (shipped in the package, no CDN)."""


STATIC_FILES = {
    path.relative_to(STATIC).as_posix(): path for path in STATIC.rglob("*") if path.is_file()
}
"""The files `/static/` serves, by name: a request names one of them or gets 404, and what a
client typed (a NUL byte, 5,000 characters) never reaches the file system."""


@get("/", include_in_schema=False)
async def dashboard() -> Response[bytes]:
    """The live dashboard (public, like the market data it shows)."""
    return Response((STATIC / "index.html").read_bytes(), media_type=MediaType.HTML)


@get("/static/{name:path}", include_in_schema=False)
async def static_file(name: str) -> Response[bytes]:
    """The dashboard's script, styles and chart (shipped in the package, no CDN)."""
    path = STATIC_FILES.get(name.lstrip("/"))
    if path is None:
        raise NotFound("no such static file", path=name)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return Response(path.read_bytes(), media_type=media_type)


HISTORY_DICTIONARY = msgspec.json.encode(dictionary.as_json())


@get("/schema/history.json", include_in_schema=False)
async def history_dictionary() -> Response[bytes]:
    """Every Parquet history table and column, beside the feed's AsyncAPI document."""
    return Response(HISTORY_DICTIONARY, media_type=MediaType.JSON)


def _clock(settings: Settings) -> Clock:
    if settings.clock == "real":
        return SystemClock()
    start = settings.clock_start
    start_ns = from_datetime(start) if start is not None else time.time_ns()
    # market times are whole milliseconds
    return ManualClock(start_ns - start_ns % NS_PER_MS)


def create_app(settings: Settings) -> Litestar:
    db = Database(settings.database_path)
    clock = _clock(settings)
    market = Market(db, clock, settings)
    limits = RateLimits(settings.rate_per_second, settings.rate_burst)
    services = Services(settings, clock, market, Tenant(market), Operator(market), limits)
    feed = build_feed(db, settings)
    market.listeners.append(feed.on_tick)
    scheduler = TickScheduler(market, settings.tick_seconds) if settings.clock == "real" else None

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await feed.start()
        if scheduler is not None:
            scheduler.start()
        # What exists at start lives as long as the process: out of the collector's full passes,
        # which otherwise stalled the first requests ~40 ms (measured under bench/bench_api.py).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            if scheduler is not None:
                scheduler.stop()
            await feed.stop()
            db.close()

    handlers: list[ControllerRouterHandler] = [*tenant.ROUTES, *operator.ROUTES]
    handlers += [dashboard, static_file, history_dictionary]
    handlers += feed.route_handlers
    return Litestar(
        route_handlers=handlers,
        dependencies={"services": Provide(lambda: services, sync_to_thread=False)},
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        openapi_config=OpenAPIConfig(title="burstmarket", version=__version__, path="/schema"),
        request_max_body_size=settings.max_body_bytes,
        debug=False,
        logging_config=None,  # server.py configures logging once for the process
    )
