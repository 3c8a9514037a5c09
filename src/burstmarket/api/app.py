"""The litestar app factory: store, clock, market, tick loop, routes and the feed's plug-in."""

from __future__ import annotations

import asyncio
import gc
import logging
import mimetypes
import os
import signal
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
import msgspec
from litestar import Litestar, MediaType, Response, get
from litestar.config.cors import CORSConfig
from litestar.di import Provide
from litestar.params import FromPath
from litestar.types import ControllerRouterHandler

from burstmarket import __version__, apidoc, metrics
from burstmarket.api import health, operator, tenant
from burstmarket.api.auth import Tokens
from burstmarket.api.bodies import StrictBody
from burstmarket.api.dependencies import Dependencies
from burstmarket.api.errors import HANDLERS
from burstmarket.api.ratelimit import RateLimits
from burstmarket.clock import NS_PER_MS, Clock, ManualClock, SystemClock, from_datetime
from burstmarket.errors import NotFound
from burstmarket.feed import FeedOptions, build_feed
from burstmarket.feed.edge import Edge
from burstmarket.history import dictionary
from burstmarket.lease import Leases, LeaseUnavailable
from burstmarket.market.market import Market
from burstmarket.market.operator import Operator
from burstmarket.market.tenant import Tenant
from burstmarket.scheduler import TickScheduler
from burstmarket.settings import Settings
from burstmarket.store import Database

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The dashboard's page, script and styles, and the API docs' Swagger UI (`docs-ui/`): shipped
in the package, no CDN."""


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
async def static_file(name: FromPath[str]) -> Response[bytes]:
    """The dashboard's script, styles and chart, the docs UI's (shipped in the package)."""
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


def _cors(settings: Settings) -> CORSConfig | None:
    """Pages of other origins may read the public market data: GET, with If-None-Match to
    revalidate and the ETag to read. Nothing else passes a preflight, an Authorization header
    included, so no page can call a tenant or operator endpoint."""
    if not settings.cors_origins:
        return None
    return CORSConfig(
        allow_origins=list(settings.cors_origins),
        allow_methods=["GET"],
        allow_headers=["If-None-Match"],
        expose_headers=["ETag"],
        max_age=600,
    )


def _feed_options(settings: Settings) -> FeedOptions:
    return FeedOptions(backlog=settings.feed_backlog, ping_seconds=settings.feed_ping_seconds)


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


def create_app(settings: Settings) -> Litestar:
    # With --islands, the leases first: a process refused them never opens the store (which
    # the owner may hold, on shared storage).
    leases = None
    if settings.bus is not None and settings.islands is not None:
        leases = _leases(settings, settings.islands)
    try:
        db = Database(settings.database_path)
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
    limits = RateLimits(settings.rate_per_second, settings.rate_burst)
    tokens = Tokens(market, settings.operator_token, limits)
    deps = Dependencies(clock, market, Tenant(market), Operator(market))
    feed = build_feed(db, settings, _feed_options(settings))
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
        static_file,
        history_dictionary,
        *feed.route_handlers,
        *health.routes(db, scheduler, settings.tick_seconds),
    ]
    app = Litestar(
        route_handlers=handlers,
        dependencies={"deps": Provide(lambda: deps, sync_to_thread=False)},
        dto=StrictBody,  # every handler's `data`: api/bodies.py
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        openapi_config=apidoc.openapi_config(),
        plugins=[apidoc.MoneyAsNumber()],
        request_max_body_size=settings.max_body_bytes,
        cors_config=_cors(settings),
        debug=False,
        logging_config=None,  # server.py configures logging once for the process
    )
    apidoc.finish(app.openapi_schema)
    return app


def create_edge_app(settings: Settings) -> Litestar:
    """A feed edge (`burstmarket feed --bus …`, feed/edge.py): the market's feed endpoints fed
    from the bus, the probes, and nothing else: no store, no tenant or operator endpoint."""
    assert settings.bus is not None
    edge = Edge(settings.bus, _feed_options(settings))
    metrics.SUBSCRIBERS.set_function(lambda: edge.service.subscribers)

    async def checks() -> dict[str, health.Check]:
        return {"bus": {"ok": edge.ready, "detail": edge.detail}}

    async def versions() -> dict[str, str]:
        return {"version": __version__}

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        edge.start()
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await edge.stop()

    app = Litestar(
        route_handlers=[*edge.service.route_handlers, static_file,
                        *health.probes(checks, versions)],
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        openapi_config=apidoc.openapi_config(),
        request_max_body_size=settings.max_body_bytes,
        cors_config=_cors(settings),
        debug=False,
        logging_config=None,
    )
    apidoc.finish(app.openapi_schema)
    return app
