"""Bearer tokens, checked once per router by a guard: a cluster token acts on its own cluster
(the tenant router), the operator token on /api/admin/* (the admin router). A handler never
checks a token itself; a tenant handler is handed its cluster as `me` (api/dependencies.py).

Guards run before the body is read: a request without a valid token is refused for that, whatever
its body. Each cluster token's requests are counted against its rate limit (api/ratelimit.py) as
soon as the token is known, before any work; the operator token has none (the operator's own
tools). Everything here is read from memory: it never blocks the event loop.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler

from burstmarket.api.ratelimit import RateLimits
from burstmarket.errors import Forbidden, Unauthorized
from burstmarket.market.market import Market

Connection = ASGIConnection[Any, Any, Any, Any]


def bearer(connection: Connection) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class Tokens:
    def __init__(self, market: Market, operator_token: str | None, limits: RateLimits) -> None:
        self._market = market
        self._operator_token = operator_token
        self._limits = limits

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokens:
        # litestar deep-copies a router as it registers it, its guards (these methods) with it;
        # the tokens are the market's, one for the whole process
        return self

    def _is_operator(self, token: str) -> bool:
        # bytes: compare_digest refuses str with non-ASCII characters, and a header may carry any
        return self._operator_token is not None and hmac.compare_digest(
            token.encode(), self._operator_token.encode()
        )

    # The guards are coroutines: litestar runs a plain function guard in a worker thread, a
    # thread hop per request for what takes microseconds from memory.

    async def cluster(self, connection: Connection, _: BaseRouteHandler) -> None:
        """Guard of the tenant router: a cluster's token, within its rate; the cluster's id is
        left in `connection.state.cluster` (for `me` and the REFUSED line)."""
        token = bearer(connection)
        if token is None:
            raise Unauthorized("a cluster token is required: 'Authorization: Bearer <token>'")
        cluster = self._market.cluster_for_token(token)
        if cluster is None:
            if self._is_operator(token):
                raise Forbidden("the operator token acts on /api/admin/* only, not on a cluster")
            raise Unauthorized("unknown token")
        connection.state.cluster = cluster
        self._limits.take(cluster)

    async def operator(self, connection: Connection, _: BaseRouteHandler) -> None:
        """Guard of the admin router: the operator token, and only it."""
        if self._operator_token is None:
            raise Forbidden(
                "the operator endpoints are closed: BURSTMARKET_OPERATOR_TOKEN is not set"
            )
        token = bearer(connection)
        if token is None:
            raise Unauthorized("the operator token is required: 'Authorization: Bearer <token>'")
        if self._is_operator(token):
            return
        cluster = self._market.cluster_for_token(token)
        if cluster is not None:
            connection.state.cluster = cluster
            raise Forbidden("a cluster token cannot act on /api/admin/*")
        raise Unauthorized("unknown token")
