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
from litestar.params import QueryParameter
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
    # a parameter litestar checked against the handler's signature: the first one at fault
    # (a body is decoded by api/bodies.py; litestar only reports one that is missing)
    if isinstance(exc.extra, list) and exc.extra and isinstance(exc.extra[0], dict):
        fault = exc.extra[0]
        if fault.get("source") == "body":
            return Invalid("body", "a JSON object is required")
        key = str(fault.get("key", "request"))
        return Invalid(_as_sent(request, key), str(fault.get("message", exc.detail)))
    missing = _missing_query(request)
    if missing is not None:
        return Invalid(missing, "is required")
    return Invalid("request", str(exc.detail))


def _as_sent(request: AnyRequest, key: str) -> str:
    """A parameter's name as the client sent it (`format`, not the handler's `output`)."""
    parameter = request.route_handler.parsed_fn_signature.parameters.get(key)
    alias = getattr(parameter.kwarg_definition, "name", None) if parameter else None
    return alias or key


def _missing_query(request: AnyRequest) -> str | None:
    """The first required query parameter of the route that the request lacks, if any."""
    parameters = request.route_handler.parsed_fn_signature.parameters
    for name, parameter in parameters.items():
        kind = parameter.kwarg_definition
        if isinstance(kind, QueryParameter) and not parameter.has_default:
            sent = kind.name or name
            if sent not in request.query_params:
                return sent
    return None


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


def refusal_for(exc: Exception) -> MarketError | None:
    """The refusal `exc` is answered with: itself, or the store fault it is; None: a bug."""
    if isinstance(exc, MarketError):
        return exc
    # Here, not at the top: a feed edge answers with these handlers and never loads the store.
    from burstmarket.store import store_fault

    return store_fault(exc)


def on_bug(request: AnyRequest, exc: Exception) -> Response[Any]:
    fault = refusal_for(exc)
    if fault is not None:
        return refusal(request, fault)
    log.exception("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return Response({"error": "internal", "detail": "an internal error (a bug)"}, status_code=500)


HANDLERS = {MarketError: on_market_error, HTTPException: on_http_error, Exception: on_bug}
