"""The app of `burstmarket replay` (feed/replay.py): the feed's websocket, latest-row endpoints
and AsyncAPI document served from a recorded period of the Parquet history, the probes and the
API docs; no store, no market, no tenant or operator endpoint."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar

from burstmarket import __version__, metrics
from burstmarket.api import health
from burstmarket.api.edge_app import feed_app
from burstmarket.feed.replay import Replay
from burstmarket.settings import Settings


def create_replay_app(settings: Settings, replay: Replay) -> Litestar:
    """The replay's feed endpoints; ready once the replay has published its first tick."""
    metrics.SUBSCRIBERS.set_function(lambda: replay.service.subscribers)

    async def checks() -> dict[str, health.Check]:
        ticked = bool(replay.service.islands)
        detail = "the record ended" if replay.finished.is_set() else "replaying"
        return {"replay": {"ok": ticked, "detail": detail if ticked else "not started"}}

    async def versions() -> dict[str, str]:
        return {"version": __version__}

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await replay.start()
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await replay.stop()

    return feed_app(
        settings, [*replay.service.route_handlers, *health.probes(checks, versions)], lifespan
    )
