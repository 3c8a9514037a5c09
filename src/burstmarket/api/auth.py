"""Bearer tokens: a cluster token acts on its own cluster, the operator token on /api/admin/*.

Each cluster token's requests are counted against its rate limit (api/ratelimit.py) as soon as
the token is known, before any work; the operator token has none (the operator's own tools).
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar import Request

from burstmarket.api.ratelimit import RateLimits
from burstmarket.errors import Forbidden, Unauthorized
from burstmarket.market.service import Market

AnyRequest = Request[Any, Any, Any]


def _bearer(request: AnyRequest) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _is_operator(token: str, operator_token: str | None) -> bool:
    # bytes: compare_digest refuses str with non-ASCII characters, and a header may carry any
    return operator_token is not None and hmac.compare_digest(
        token.encode(), operator_token.encode()
    )


def cluster_of(
    request: AnyRequest, market: Market, operator_token: str | None, limits: RateLimits
) -> str:
    """The id of the cluster whose token made the request (from memory: never blocks)."""
    token = _bearer(request)
    if token is None:
        raise Unauthorized("a cluster token is required: 'Authorization: Bearer <token>'")
    cluster = market.cluster_for_token(token)
    if cluster is None:
        if _is_operator(token, operator_token):
            raise Forbidden("the operator token acts on /api/admin/* only, not on a cluster")
        raise Unauthorized("unknown token")
    request.state.cluster = cluster
    limits.take(cluster)
    return cluster


def require_operator(request: AnyRequest, market: Market, operator_token: str | None) -> None:
    if operator_token is None:
        raise Forbidden("the operator endpoints are closed: BURSTMARKET_OPERATOR_TOKEN is not set")
    token = _bearer(request)
    if token is None:
        raise Unauthorized("the operator token is required: 'Authorization: Bearer <token>'")
    if _is_operator(token, operator_token):
        return
    cluster = market.cluster_for_token(token)
    if cluster is not None:
        request.state.cluster = cluster
        raise Forbidden("a cluster token cannot act on /api/admin/*")
    raise Unauthorized("unknown token")
