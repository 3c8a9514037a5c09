"""The app of a feed edge (`burstmarket feed --bus …`, feed/edge.py): the market's feed
endpoints fed from the bus, the probes, the API docs, and nothing else. It imports neither the
market nor the store, so an edge never loads DuckDB."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from litestar import Litestar
from litestar.types import ControllerRouterHandler

from burstmarket import __version__, apidoc, metrics
from burstmarket.api import health
from burstmarket.api.errors import HANDLERS
from burstmarket.api.web import answer_options, cors, favicon, feed_options, static_file
from burstmarket.feed.edge import Edge
from burstmarket.settings import Settings


def create_edge_app(settings: Settings) -> Litestar:
    """A feed edge (`burstmarket feed --bus …`, feed/edge.py): the market's feed endpoints fed
    from the bus, the probes, and nothing else: no store, no tenant or operator endpoint."""
    assert settings.bus is not None
    edge = Edge(settings.bus, feed_options(settings))
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

    handlers = [*edge.service.route_handlers, static_file, favicon]
    return feed_app(settings, [*handlers, *health.probes(checks, versions)], lifespan)


def feed_app(
    settings: Settings,
    route_handlers: Sequence[ControllerRouterHandler],
    lifespan: Callable[[Litestar], AbstractAsyncContextManager[None]],
) -> Litestar:
    """The app of a process that serves the feed alone (a feed edge, `burstmarket replay`):
    `route_handlers` and the API docs, with the market's error handling, CORS and body limit."""
    app = Litestar(
        route_handlers=route_handlers,
        before_request=answer_options,  # OPTIONS: every method of the path
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        openapi_config=apidoc.openapi_config(),
        request_max_body_size=settings.max_body_bytes,
        cors_config=cors(settings),
        debug=False,
        logging_config=None,
    )
    apidoc.finish(app.openapi_schema)
    return app
