"""Which requests the demand journal records (store/journal.py, docs/history.md "demand"):
every request that may change the market, with the cluster and island it concerns, so a
backtest can send each again at its market time. Reads are not recorded, nor the operator's
manual ticks (the history's `ticks` are the record of those)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import Request

from burstmarket.api.auth import bearer
from burstmarket.clock import Clock
from burstmarket.market.market import Market
from burstmarket.store import journal

READS = frozenset({"GET", "HEAD", "OPTIONS"})
OPERATOR = "/api/admin/"
NOT_RECORDED = frozenset({"/api/admin/ticks"})


def recorder(market: Market, clock: Clock) -> Callable[[Request[Any, Any, Any]], Awaitable[None]]:
    """The app's `before_request` part that says what the request records once it commits."""

    async def record(request: Request[Any, Any, Any]) -> None:
        path = request.url.path
        if request.method in READS or not path.startswith("/api/") or path in NOT_RECORDED:
            journal.record(None)  # nothing, and nothing a request before left set
            return
        body = (await request.body()).decode("utf-8", errors="replace")
        params = request.path_params
        if path.startswith(OPERATOR):
            named = _named(body) if path == OPERATOR + "clusters" else {}
            cluster = params.get("cluster_id") or named.get("name")
            island = params.get("island_id") or named.get("island")
        else:
            token = bearer(request)
            cluster = None if token is None else market.cluster_for_token(token)
            island = None
        journal.record(
            journal.Entry(
                clock.now_ns,
                request.method,
                path,
                body,
                cluster,
                island,
                params.get("block_id"),
            )
        )

    return record


def _named(body: str) -> dict[str, str]:
    """The cluster and island a new cluster's body names (a body the handler will refuse names
    none: it records nothing anyway)."""
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {key: value for key, value in decoded.items() if isinstance(value, str)}
