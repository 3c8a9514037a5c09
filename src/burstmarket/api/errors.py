"""The one place refusals are rendered: `{"error", "detail", ...figures}` + one REFUSED line.

Framework errors (an unknown route, a wrong method, a malformed query, a body over the size
limit) are turned into the same tree first, so a client never sees litestar's own error shape
and bad input never a 500. A fault of the store (a full disk) is `store-unavailable`, 503 with
`Retry-After`: nothing was written, and the service carries on once the fault is gone.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
)
from litestar.status_codes import HTTP_413_REQUEST_ENTITY_TOO_LARGE

from burstmarket.errors import (
    Forbidden,
    Invalid,
    MarketError,
    MethodNotAllowed,
    NotFound,
    TooLarge,
    Unauthorized,
)
from burstmarket.market.refusals import log_refusal
from burstmarket.store import store_fault

log = logging.getLogger(__name__)

AnyRequest = Request[Any, Any, Any]


def _as_market_error(request: AnyRequest, exc: HTTPException) -> MarketError:
    if isinstance(exc, NotFoundException):
        return NotFound(str(exc.detail))
    if isinstance(exc, MethodNotAllowedException):
        allowed = (exc.headers or {}).get("allow", "")
        return MethodNotAllowed(f"{request.method} is not allowed here", allow=allowed)
    if isinstance(exc, NotAuthorizedException):
        return Unauthorized(str(exc.detail))
    if isinstance(exc, PermissionDeniedException):
        return Forbidden(str(exc.detail))
    if exc.status_code == HTTP_413_REQUEST_ENTITY_TOO_LARGE:
        limit = request.route_handler.resolve_request_max_body_size()
        return TooLarge(f"the request body is over {limit} bytes", limit_bytes=limit)
    field = "request"
    if isinstance(exc.extra, list) and exc.extra and isinstance(exc.extra[0], dict):
        field = str(exc.extra[0].get("key", field))
    return Invalid(field, str(exc.detail))


def refusal(request: AnyRequest, exc: MarketError) -> Response[Any]:
    cluster = getattr(request.state, "cluster", None)
    log_refusal(exc, cluster)
    headers = exc.headers()
    if isinstance(exc, MethodNotAllowed):
        headers["Allow"] = str(exc.figures["allow"])
    return Response(exc.body(), status_code=exc.status, headers=headers)


def on_market_error(request: AnyRequest, exc: Exception) -> Response[Any]:
    assert isinstance(exc, MarketError)
    return refusal(request, exc)


def on_http_error(request: AnyRequest, exc: Exception) -> Response[Any]:
    assert isinstance(exc, HTTPException)
    if exc.status_code >= 500:
        return on_bug(request, exc)
    return refusal(request, _as_market_error(request, exc))


def on_bug(request: AnyRequest, exc: Exception) -> Response[Any]:
    fault = store_fault(exc)
    if fault is not None:
        return refusal(request, fault)
    log.exception("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return Response({"error": "internal", "detail": "an internal error (a bug)"}, status_code=500)


HANDLERS = {MarketError: on_market_error, HTTPException: on_http_error, Exception: on_bug}
