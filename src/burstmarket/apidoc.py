"""The OpenAPI 3.1 document (`/schema/openapi.json`) and its UI, in one place.

Litestar writes the document from the handlers' own types: request bodies and answers from the
Structs of contract.py, query and path parameters from the signatures, the bearer scheme from
the routers' `security`. This module gives it the rest:
- `refusals(...)`: a route's refusals, `{error, detail, ...figures}` with each code under its
  status (errors.py holds code and status of each);
- `MoneyAsNumber`: money read as a Decimal goes on the wire as a JSON number, not a string;
- `documented(...)`: what a signature cannot say, for the few handlers that answer prebuilt
  bytes: the JSON Schema of the feed's answers (from its catalog) and the other media types
  (CSV, Arrow) an endpoint may answer in;
- `finish(...)`: litestar lists a `400 ValidationException` answer of its own shape on every
  operation with parameters; ours never answer it (api/errors.py makes it `invalid`, 422),
  so it goes;
- the Swagger UI at `/schema` and `/schema/swagger`, its script and styles shipped in the
  package (`static/docs-ui/`, from the swagger-ui-dist npm package), so it renders offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import msgspec
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Schema,
    SecurityScheme,
)
from litestar.params import QueryParameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from burstmarket import __version__
from burstmarket.errors import MarketError

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator

MARKET_DATA = "market data (public)"
"""The tag of the public, read-only endpoints."""
BEARER = "BearerToken"
SECURITY: list[dict[str, list[str]]] = [{BEARER: []}]
"""A router's `security`: its routes take `Authorization: Bearer <token>`."""

TimeQuery = Annotated[
    str | None,
    QueryParameter(
        description="RFC 3339; no offset means UTC", schema_extra={"format": "date-time"}
    ),
]
"""A time a client may send in the query (`start`, `end`): checked by clock.parse_time."""

DOCS_UI = "/static/docs-ui"
"""Where app.py serves the vendored Swagger UI (src/burstmarket/static/docs-ui/)."""


def openapi_config() -> OpenAPIConfig:
    ui = SwaggerRenderPlugin(
        path=["/", "/swagger"],
        js_url=f"{DOCS_UI}/swagger-ui-bundle.js",
        css_url=f"{DOCS_UI}/swagger-ui.css",
        standalone_preset_js_url=f"{DOCS_UI}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{DOCS_UI}/favicon-32x32.png'>",
    )
    scheme = SecurityScheme(
        type="http",
        scheme="bearer",
        description="A cluster's token on the tenant endpoints, the operator's on /api/admin/*.",
    )
    return OpenAPIConfig(
        title="burstmarket",
        version=__version__,
        path="/schema",
        use_handler_docstrings=True,
        components=Components(security_schemes={BEARER: scheme}),
        render_plugins=[ui],
    )


class MoneyAsNumber(OpenAPISchemaPlugin):
    """Money in a request body is a JSON number (read as a Decimal, digit for digit)."""

    @staticmethod
    def is_plugin_supported_type(value: Any) -> bool:
        return value is Decimal

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        return Schema(type=OpenAPIType.NUMBER)


def refusals(*errors: type[MarketError]) -> dict[int, ResponseSpec]:
    """The answers of a route's refusals, by status, each listing the codes it may carry."""
    by_status: dict[int, list[str]] = {}
    for error in errors:
        codes = by_status.setdefault(error.status, [])
        if error.code not in codes:
            codes.append(error.code)
    return {
        status: ResponseSpec(
            data_container=_refusal(tuple(sorted(codes))),
            description="Refused: " + ", ".join(f"`{code}`" for code in sorted(codes)),
            generate_examples=False,
        )
        for status, codes in sorted(by_status.items())
    }


@cache
def _refusal(codes: tuple[str, ...]) -> type[msgspec.Struct]:
    """The body of a refusal with one of `codes`, plus its figures (docs/api.md "Errors")."""
    name = "Refused" + "".join(part.capitalize() for code in codes for part in code.split("-"))
    error = Literal[codes]  # type: ignore[valid-type]
    return msgspec.defstruct(name, [("error", error), ("detail", str)], module=__name__)


def documented(
    answer: Mapping[str, Any] | None = None, also: Mapping[str, str] | None = None
) -> type[Operation]:
    """An Operation class for a handler answering prebuilt bytes: `answer`, the JSON Schema of
    its JSON answer; `also`, other media types it may answer in (media type -> description)."""

    class Documented(Operation):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            ok = cast(OpenAPIResponse, (self.responses or {})["200"])
            content = ok.content if ok.content is not None else {}
            if answer is not None:
                content["application/json"] = OpenAPIMediaType(schema=cast(Schema, dict(answer)))
            for media_type, description in (also or {}).items():
                content[media_type] = OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.STRING, description=description)
                )
            ok.content = content

    return Documented


def finish(openapi: OpenAPI) -> None:
    """Drop litestar's own `400` answers: a malformed parameter or body is our `invalid`."""
    for item in (openapi.paths or {}).values():
        for method in ("get", "put", "post", "delete", "options", "head", "patch", "trace"):
            operation = getattr(item, method, None)
            if operation is not None and operation.responses:
                operation.responses.pop("400", None)
