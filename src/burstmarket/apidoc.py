"""What the OpenAPI document cannot learn from a handler's signature, added to its operation.

Handlers take their body as bytes (api/bodies.py decodes it, so that a bad body is our own
`invalid` refusal), and the market-data handlers read their query themselves; litestar sees
neither. `documented` gives a route an Operation class that adds the body's JSON Schema (from
its msgspec Struct, the one that decodes it) and the query parameters, so the document, and
the fuzz test generated from it, cover what the handlers really read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec
from litestar.openapi.spec import OpenAPIMediaType, Operation, Parameter, RequestBody, Schema


def body_schema(kind: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of a request body Struct (one level: bodies hold no nested Structs)."""
    schema = msgspec.json.schema(kind)
    defs = schema.pop("$defs", {})
    return cast(dict[str, Any], defs[kind.__name__] if "$ref" in schema else schema)


def documented(
    body: type[msgspec.Struct] | None = None,
    query: Mapping[str, Mapping[str, Any]] | None = None,
    required: tuple[str, ...] = (),
) -> type[Operation]:
    """An Operation class adding `body` (a Struct) and `query` (name -> JSON Schema)."""
    request_body = None
    if body is not None:
        schema = cast(Schema, body_schema(body))  # serialised as is: a JSON Schema dict
        request_body = RequestBody(
            content={"application/json": OpenAPIMediaType(schema=schema)}, required=True
        )
    parameters = [
        Parameter(name=name, param_in="query", required=name in required,
                  schema=cast(Schema, dict(spec)))
        for name, spec in (query or {}).items()
    ]

    class Documented(Operation):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if request_body is not None:
                self.request_body = request_body
            if parameters:
                self.parameters = [*(self.parameters or []), *parameters]

    return Documented
