"""The litestar app factory: store, clock, market, tick loop, routes and the feed's plug-in."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
import msgspec
from litestar import Litestar, MediaType, Request, Response, get
from litestar.di import Provide
from litestar.types import ControllerRouterHandler

from burstmarket import apidoc, metrics
from burstmarket.api import health, operator, tenant
from burstmarket.api.auth import Tokens
from burstmarket.api.bodies import StrictBody
from burstmarket.api.dependencies import Dependencies
from burstmarket.api.errors import HANDLERS
from burstmarket.api.ratelimit import RateLimits
from burstmarket.api.recording import recorder
from burstmarket.api.web import STATIC, answer_options, cors, favicon, feed_options, static_file
from burstmarket.clock import NS_PER_MS, Clock, ManualClock, SystemClock, from_datetime
from burstmarket.feed.feed import build_feed
from burstmarket.history import dictionary
from burstmarket.lease import Leases, LeaseUnavailable
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market
from burstmarket.scheduler import TickScheduler
from burstmarket.settings import Settings
from burstmarket.store import Database

log = logging.getLogger(__name__)


@get("/", include_in_schema=False)
async def dashboard() -> Response[bytes]:
    """The live dashboard (public, like the market data it shows)."""
    return Response((STATIC / "index.html").read_bytes(), media_type=MediaType.HTML)


@get("/console", include_in_schema=False)
async def console() -> Response[bytes]:
    """The tenants' console: signed in with a cluster token, it calls the tenant API like any
    other client (docs/dashboard-and-console.md, "Console")."""
    return Response((STATIC / "console.html").read_bytes(), media_type=MediaType.HTML)


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


def _leases(settings: Settings, islands: Iterable[str]) -> Leases:
    """The islands' leases on the bus, claimed (lease.py), or LeaseUnavailable."""
    assert settings.bus is not None
    owner = Leases.owner_name(settings.port, str(settings.data_dir.resolve()))
    leases = Leases(settings.bus, islands, settings.lease_seconds, owner)
    leases.claim()
    return leases


def _lost(island: str) -> None:
    """Another process holds an island this one ran (its lease lapsed while this process could
    not renew it): stop, so that no island is ever ticked by two processes."""
    log.error("island %s is run by another process now (its lease lapsed): stopping", island)
    os.kill(os.getpid(), signal.SIGTERM)


def _before_request(
    record: Callable[[Request[Any, Any, Any]], Awaitable[None]],
) -> Callable[[Request[Any, Any, Any]], Awaitable[Response[None] | None]]:
    """OPTIONS answers with every method of the path (api/web.py); any other request says what
    the demand journal records of it (api/recording.py) and goes on to its handler."""

    async def before(request: Request[Any, Any, Any]) -> Response[None] | None:
        answered = await answer_options(request)
        if answered is None:
            await record(request)
        return answered

    return before


def create_app(settings: Settings, opening: Callable[[], None] = lambda: None) -> Litestar:
    """The market's app. `opening` is called once its islands' leases are in hand and its store
    open and checked: `serve` says its banner there, the log's first lines, then the store's
    migration in one line. A start that fails before (a lease, the store) says only why."""
    # With --islands, the leases first: a process refused them never opens the store (which
    # the owner may hold, on shared storage).
    leases = None
    if settings.bus is not None and settings.islands is not None:
        leases = _leases(settings, settings.islands)
    try:
        db = Database(settings.database_path, settings.checkpoint_bytes)
    except Exception:
        if leases is not None:  # the next process need not wait for them to lapse
            leases.release()
        raise
    clock = _clock(settings)
    market = Market(db, clock, settings)
    if settings.bus is not None and leases is None:  # every island of the store
        try:
            leases = _leases(settings, market.island_ids())
        except LeaseUnavailable:
            db.close()
            raise
    opening()
    if db.migrated is not None:
        log.info("store: migrated %s from schema %d to %d", db.path, *db.migrated)
    limits = RateLimits(settings.rate_per_second, settings.rate_burst)
    tokens = Tokens(market, settings.operator_token, limits)
    deps = Dependencies(clock, market, Tenant(market), Operator(market))
    feed = build_feed(db, settings, feed_options(settings), market.cluster_for_token)
    market.listeners += [feed.on_tick, metrics.on_tick]
    metrics.watch(db.queued, lambda: feed.subscribers)
    scheduler = TickScheduler(market, settings.tick_seconds) if settings.clock == "real" else None

    async def renew(leases: Leases) -> None:
        while True:
            await asyncio.sleep(leases.seconds / 3)
            await anyio.to_thread.run_sync(leases.renew, _lost)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        renewing = None if leases is None else asyncio.create_task(renew(leases))
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
                await scheduler.stop()
            await feed.stop()
            db.close()
            if leases is not None and renewing is not None:
                renewing.cancel()
                await asyncio.gather(renewing, return_exceptions=True)
                await anyio.to_thread.run_sync(leases.release)

    handlers: list[ControllerRouterHandler] = [
        tenant.router(tokens, deps.tenant),
        operator.admin_router(tokens),
        operator.get_islands,
        dashboard,
        console,
        static_file,
        favicon,
        history_dictionary,
        *feed.route_handlers,
        *health.routes(db, scheduler, settings.tick_seconds),
    ]
    app = Litestar(
        route_handlers=handlers,
        dependencies={"deps": Provide(lambda: deps, sync_to_thread=False)},
        before_request=_before_request(recorder(market, clock)),
        dto=StrictBody,  # every handler's `data`: api/bodies.py
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        openapi_config=apidoc.openapi_config(),
        plugins=[apidoc.MoneyAsNumber()],
        request_max_body_size=settings.max_body_bytes,
        cors_config=cors(settings),
        debug=False,
        logging_config=None,  # server.py configures logging once for the process
    )
    apidoc.finish(app.openapi_schema)
    app.state.market = market  # for an in-process driver that ticks it (record/backtest.py)
    return app
