"""The OpenAPI 3.1 document (`/schema/openapi.json`) and its UI, in one place.

Litestar writes the document from the handlers' own types: request bodies and answers from the
Structs of contract.py, query and path parameters from the signatures, the bearer scheme from
the routers' `security`. This module gives it the rest:
- `refusals(...)`: a route's refusals, `{error, detail, ...figures}` with each code under its
  status (errors.py holds code and status of each);
- `MoneyAsNumber`: money read as a Decimal goes on the wire as a JSON number, not a string,
  within the range money.py holds it to;
- `documented(...)`: what a signature cannot say, for the few handlers that answer prebuilt
  bytes: the JSON Schema of the feed's answers (from its catalog) and the other media types
  (CSV, Arrow) an endpoint may answer in;
- `finish(...)`: litestar lists a `400 ValidationException` answer of its own shape on every
  operation with parameters; ours never answer it (api/errors.py makes it `invalid`, 422),
  so it goes. It also writes what litestar leaves out of what a client sends, each from the
  definition the server enforces: that a body refuses unknown fields (`additionalProperties:
  false`, the Struct's `forbid_unknown_fields`), a bound of 0 on an optional number (the
  Struct field's `msgspec.Meta`; litestar drops a 0 as if unset), and a time's format and range
  (`TimeSchema`, from clock.py's EARLIEST and LATEST);
- `operation_id`: every operationId in one style, the method and the path (`getMarketStats`,
  `postAdminIslandsByIslandIdNodesByNodeIdCordon`), never the handler's function name;
- the Swagger UI at `/schema` and `/schema/swagger`, its script and styles shipped in the
  package (`static/docs-ui/`, from the swagger-ui-dist npm package), so it renders offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import msgspec
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIFormat,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Schema,
    SecurityScheme,
)
from litestar.params import QueryParameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.types import Method
from litestar.typing import FieldDefinition

from burstmarket import __version__
from burstmarket.clock import EARLIEST, LATEST
from burstmarket.contract import Body
from burstmarket.errors import MarketError
from burstmarket.money import MAX_AMOUNT_USD, MAX_PRICE_USD

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.handlers import HTTPRouteHandler
    from litestar.types.internal_types import PathParameterDefinition

MARKET_DATA = "market data (public)"
"""The tag of the public, read-only endpoints."""
BEARER = "BearerToken"
SECURITY: list[dict[str, list[str]]] = [{BEARER: []}]
"""A router's `security`: its routes take `Authorization: Bearer <token>`."""

TIME_RANGE = f"from {EARLIEST:%Y-%m-%d} to before {LATEST:%Y-%m-%d}"
TimeQuery = Annotated[
    str | None,
    QueryParameter(
        description=f"RFC 3339; no offset means UTC; {TIME_RANGE}",
        schema_extra={"format": "date-time"},
    ),
]
"""A time a client may send in the query (`start`, `end`): checked by clock.parse_time (its
range goes into the document in `finish`)."""

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
        description=DESCRIPTION,
        path="/schema",
        operation_id_creator=operation_id,
        use_handler_docstrings=True,
        components=Components(security_schemes={BEARER: scheme}),
        render_plugins=[ui],
    )


DESCRIPTION = (
    "A market for preemptible GPU capacity: tenants declare VM capacity or Kubernetes jobs at "
    "a price per GPU-hour, every tick clears each island's auction, and anyone may read the "
    "market data (these `market data (public)` endpoints, and the websocket feed at "
    "`/ws/market`, whose AsyncAPI document is `/schema/asyncapi.json`). Money is USD as a JSON "
    "number, times are RFC 3339 UTC, and every refusal is `{error, detail, ...figures}` with a "
    "code from the list in docs/api.md."
)
"""The document's `info.description`."""


def operation_id(
    route_handler: HTTPRouteHandler,
    http_method: Method,
    path_components: list[str | PathParameterDefinition],
) -> str:
    """`<method><Path>`: the lower-case method, then each segment of the path after `/api`
    title-cased, a path parameter as `By<Name>` (`GET /api/k8s/jobs/{job}`: `getK8sJobsByJob`).
    Unique as method and path are, whatever the handler's function is called."""
    words = []
    for component in path_components:
        if isinstance(component, str):
            words += [] if component == "api" else re.split(r"[-_]", component)
        else:
            words += ["by", *component.name.split("_")]
    return http_method.lower() + "".join(word[:1].upper() + word[1:] for word in words)


def money_schema(kind: str | None) -> Schema:
    """A JSON number, in the range of its kind of money (contract.py names the kind in the
    field's `Meta`): the range money.py, and the market, hold it to."""
    top = float(MAX_AMOUNT_USD)
    if kind == "price":  # parse_price: above 0, at most MAX_PRICE_USD
        return Schema(type=OpenAPIType.NUMBER, exclusive_minimum=0, maximum=float(MAX_PRICE_USD))
    if kind == "amount":  # parse_amount: at most MAX_AMOUNT_USD either side of 0
        return Schema(type=OpenAPIType.NUMBER, minimum=-top, maximum=top)
    if kind == "positive":  # parse_amount, and the market refuses 0 and below
        return Schema(type=OpenAPIType.NUMBER, exclusive_minimum=0, maximum=top)
    return Schema(type=OpenAPIType.NUMBER)


class MoneyAsNumber(OpenAPISchemaPlugin):
    """Money in a request body is a JSON number (read as a Decimal, digit for digit), in the
    range of its kind (`money_schema`)."""

    @staticmethod
    def is_plugin_supported_type(value: Any) -> bool:
        return value is Decimal

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        kinds = [
            meta.extra["money"]
            for meta in field_definition.metadata
            if isinstance(meta, msgspec.Meta) and meta.extra and "money" in meta.extra
        ]
        return money_schema(kinds[-1] if kinds else None)


@dataclass
class TimeSchema(Schema):
    """A time a client sends: RFC 3339, in the range clock.parse_time takes, in JSON Schema's
    format bounds (the keywords of ajv-formats; litestar's Schema has no field for them)."""

    format_minimum: str | None = field(default=None, metadata={"alias": "formatMinimum"})
    format_exclusive_maximum: str | None = field(
        default=None, metadata={"alias": "formatExclusiveMaximum"}
    )

    __hash__ = Schema.__hash__

    @classmethod
    def of(cls, schema: Schema) -> TimeSchema:
        """`schema` (a string's, with its length and description), bounded in time."""
        kept = {one.name: getattr(schema, one.name) for one in fields(Schema)}
        return cls(
            **kept | {"format": OpenAPIFormat.DATE_TIME},
            format_minimum=EARLIEST.isoformat().replace("+00:00", "Z"),
            format_exclusive_maximum=LATEST.isoformat().replace("+00:00", "Z"),
        )


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
    """Drop litestar's own `400` answers (a malformed parameter or body is our `invalid`); bound
    the times of the query; close the bodies (`_close_body`)."""
    for item in (openapi.paths or {}).values():
        for method in ("get", "put", "post", "delete", "options", "head", "patch", "trace"):
            operation = getattr(item, method, None)
            if operation is None:
                continue
            if operation.responses:
                operation.responses.pop("400", None)
            for parameter in operation.parameters or []:
                schema = getattr(parameter, "schema", None)
                if isinstance(schema, Schema) and schema.format == OpenAPIFormat.DATE_TIME:
                    parameter.schema = TimeSchema.of(schema)
    schemas = openapi.components.schemas or {}
    for body in _bodies(Body):
        if body.__name__ in schemas:  # a body some route takes
            _close_body(body, schemas[body.__name__])


def _bodies(kind: type[Body]) -> Iterator[type[Body]]:
    for sub in kind.__subclasses__():
        yield sub
        yield from _bodies(sub)


def _close_body(body: type[Body], schema: Schema) -> None:
    """What the server holds `body` to and litestar does not write: unknown fields refused, a
    0 bound of an optional number, a time's format and range."""
    if body.__struct_config__.forbid_unknown_fields:
        schema.additional_properties = False
    info = msgspec.inspect.type_info(body)
    assert isinstance(info, msgspec.inspect.StructType)
    properties = schema.properties or {}
    for one in info.fields:
        prop = properties.get(one.encode_name)
        if not isinstance(prop, Schema):
            continue  # a Struct of its own, closed as a body
        if _is_time(one.type):
            properties[one.encode_name] = TimeSchema.of(prop)
        number = _number(one.type)
        if number is not None:
            for bound, key in (
                ("gt", "exclusive_minimum"),
                ("ge", "minimum"),
                ("lt", "exclusive_maximum"),
                ("le", "maximum"),
            ):
                if getattr(number, bound) is not None and getattr(prop, key) is None:
                    setattr(prop, key, getattr(number, bound))


def _members(kind: msgspec.inspect.Type) -> Iterator[msgspec.inspect.Type]:
    """`kind` and what it wraps: an annotation's type, a union's members."""
    yield kind
    if isinstance(kind, msgspec.inspect.Metadata):
        yield from _members(kind.type)
    elif isinstance(kind, msgspec.inspect.UnionType):
        for member in kind.types:
            yield from _members(member)


def _is_time(kind: msgspec.inspect.Type) -> bool:
    """A string contract.py marks as a date-time (`extra_json_schema`, which litestar drops)."""
    return any(
        isinstance(one, msgspec.inspect.Metadata)
        and (one.extra_json_schema or {}).get("format") == "date-time"
        for one in _members(kind)
    )


def _number(kind: msgspec.inspect.Type) -> msgspec.inspect.IntType | None:
    return next((one for one in _members(kind) if isinstance(one, msgspec.inspect.IntType)), None)
