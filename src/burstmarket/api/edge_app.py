"""The app of a feed edge (`burstmarket feed --bus …`, feed/edge.py): the market's feed
endpoints fed from the bus, the probes, the API docs, and nothing else. It imports neither the
market nor the store, so an edge never loads DuckDB."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar

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

    app = Litestar(
        route_handlers=[
            *edge.service.route_handlers,
            static_file,
            favicon,
            *health.probes(checks, versions),
        ],
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
