"""The one place refusals are rendered: `{"error", "detail", ...figures}` + one REFUSED line.

Framework errors (an unknown route, a wrong method, a malformed query) are turned into the
same tree first, so a client never sees litestar's own error shape and bad input never a 500.
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

from burstmarket.errors import (
    Forbidden,
    Invalid,
    MarketError,
    MethodNotAllowed,
    NotFound,
    Unauthorized,
)
from burstmarket.market.refusals import log_refusal

log = logging.getLogger(__name__)

AnyRequest = Request[Any, Any, Any]


def _as_market_error(exc: HTTPException) -> MarketError:
    if isinstance(exc, NotFoundException):
        return NotFound(str(exc.detail))
    if isinstance(exc, MethodNotAllowedException):
        return MethodNotAllowed(str(exc.detail))
    if isinstance(exc, NotAuthorizedException):
        return Unauthorized(str(exc.detail))
    if isinstance(exc, PermissionDeniedException):
        return Forbidden(str(exc.detail))
    field = "request"
    if isinstance(exc.extra, list) and exc.extra and isinstance(exc.extra[0], dict):
        field = str(exc.extra[0].get("key", field))
    return Invalid(field, str(exc.detail))


def refusal(request: AnyRequest, exc: MarketError) -> Response[Any]:
    cluster = getattr(request.state, "cluster", None)
    log_refusal(exc, cluster)
    return Response(exc.body(), status_code=exc.status)


def on_market_error(request: AnyRequest, exc: Exception) -> Response[Any]:
    assert isinstance(exc, MarketError)
    return refusal(request, exc)


def on_http_error(request: AnyRequest, exc: Exception) -> Response[Any]:
    assert isinstance(exc, HTTPException)
    if exc.status_code >= 500:
        return on_bug(request, exc)
    return refusal(request, _as_market_error(exc))


def on_bug(request: AnyRequest, exc: Exception) -> Response[Any]:
    log.exception("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return Response({"error": "internal", "detail": "an internal error (a bug)"}, status_code=500)


HANDLERS = {MarketError: on_market_error, HTTPException: on_http_error, Exception: on_bug}
