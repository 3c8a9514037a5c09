"""What a probe, a scraper or an operator asks of the running service: `/healthz`, `/readyz`,
`/version` and `/metrics`. Public, and outside the OpenAPI document (they are not the market's
contract; docs/api.md "Running it" describes them).

Ready means the store answers a query and, on the real clock, every island's last tick is
younger than three intervals of the wall clock. On the manual clock ticks come only when asked
for (`POST /api/admin/ticks`), so no tick is ever late and the store alone decides. A feed edge
(feed/edge.py) is ready while it follows the bus.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import anyio.to_thread
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from litestar.params import HeaderParameter

from burstmarket import __version__, metrics

if TYPE_CHECKING:  # a feed edge serves the probes too, and loads neither
    from burstmarket.scheduler import TickScheduler
    from burstmarket.store import Database

LATE_INTERVALS = 3
"""A tick older than this many intervals makes the service not ready."""
STORE_SECONDS = 5.0
"""How long the store may take to answer the readiness check's query."""

Check = dict[str, Any]
AcceptHeader = Annotated[str, HeaderParameter(name="accept")]


def routes(
    db: Database, scheduler: TickScheduler | None, tick_seconds: float
) -> list[HTTPRouteHandler]:
    """The four handlers, over the market's store and (on the real clock) its tick loop."""

    async def checks() -> dict[str, Check]:
        return {"store": await _store(db), "ticks": _ticks(scheduler, tick_seconds)}

    async def versions() -> dict[str, Any]:
        schema = await anyio.to_thread.run_sync(db.schema_version)
        return {"version": __version__, "schema_version": schema}

    return probes(checks, versions)


def probes(
    checks: Callable[[], Awaitable[dict[str, Check]]],
    versions: Callable[[], Awaitable[dict[str, Any]]],
) -> list[HTTPRouteHandler]:
    """The four handlers of any burstmarket process (a market, a feed edge): `checks` decide
    readiness, each `{"ok", "detail", ...}`; `versions` is what `/version` answers."""

    @get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @get("/readyz", include_in_schema=False)
    async def readyz() -> Response[dict[str, Any]]:
        """200 when ready, else 503; either way every check, and the failing ones named."""
        found = await checks()
        failing = [name for name, check in found.items() if not check["ok"]]
        body = {"ready": not failing, "failing": failing, "checks": found}
        return Response(body, status_code=503 if failing else 200)

    @get("/version", include_in_schema=False)
    async def version() -> dict[str, Any]:
        """The package's version (and, in a market, the schema version of its store)."""
        return await versions()

    @get("/metrics", include_in_schema=False)
    async def scrape(accept: AcceptHeader = "") -> Response[bytes]:
        """Every metric (metrics.py), in the text format the scraper accepts."""
        body, content_type = metrics.exposition(accept)
        # As a header: litestar adds a charset of its own to a text/ media type, and this one
        # has its charset already.
        return Response(body, headers={"content-type": content_type})

    return [healthz, readyz, version, scrape]


async def _store(db: Database) -> Check:
    try:
        with anyio.fail_after(STORE_SECONDS):
            schema = await anyio.to_thread.run_sync(db.schema_version, abandon_on_cancel=True)
    except TimeoutError:
        return {"ok": False, "detail": f"the store did not answer within {STORE_SECONDS:g} s"}
    except Exception as exc:  # closed, invalidated by a fatal error, ...: not ready, and why
        return {"ok": False, "detail": f"the store does not answer: {exc}".splitlines()[0]}
    return {"ok": True, "detail": f"open, schema version {schema}"}


def _ticks(scheduler: TickScheduler | None, tick_seconds: float) -> Check:
    if scheduler is None:
        return {"ok": True, "detail": "manual clock: ticks run when asked for, never late"}
    limit = LATE_INTERVALS * tick_seconds
    overdue = scheduler.overdue(limit)
    if not overdue:
        return {"ok": True, "detail": f"every island ticked within the last {limit:g} s"}
    late = "; ".join(
        f"island {island} last ticked {age:.1f} s ago" for island, age in sorted(overdue.items())
    )
    return {
        "ok": False,
        "detail": f"{late} (limit {limit:g} s: {LATE_INTERVALS} intervals of {tick_seconds:g} s)",
        "overdue_seconds": {island: round(age, 3) for island, age in overdue.items()},
    }
