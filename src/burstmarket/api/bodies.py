"""The one place a request body becomes its Struct (contract.py), or an `invalid` refusal
naming the field.

Handlers declare `data: <Struct>`; litestar hands the raw body to `StrictBody` (the app's DTO),
which decodes it strictly with msgspec: the JSON text straight into the Struct, money read as a
Decimal digit for digit. When that fails, msgspec's message says what is wrong but not, as data,
where: the body is read again loosely and each field checked on its own against its type, so
the refusal names the field (and the length `limit` it went past, from the type's
`msgspec.Meta`) from the Struct's own description, never by reading the error's text.

The handler hands the Struct to the market's desk, which turns its money into integer
micro-dollars, refused, never rounded, off the grid or range (market/desks/inputs.py).
"""

from __future__ import annotations

import typing
from decimal import Decimal
from typing import Any, TypeVar

import msgspec
from litestar.dto import AbstractDTO
from litestar.typing import FieldDefinition

from burstmarket.errors import Invalid

if typing.TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Reference, Schema

T = TypeVar("T")

_loose = msgspec.json.Decoder(float_hook=Decimal)
"""Any JSON, numbers with a fraction as Decimals (so a field is checked on exactly what came)."""


def decode(raw: bytes, kind: type[T]) -> T:
    """`raw` as a `kind`; Invalid naming the field otherwise."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.DecodeError as exc:  # ValidationError included
        raise _refusal(raw, kind, str(exc)) from None


def _refusal(raw: bytes, kind: type[Any], message: str) -> Invalid:
    """Which field of `kind` the body got wrong: each one checked on its own, in the order the
    body gives them, then the required ones it left out."""
    try:
        body = _loose.decode(raw)
    except msgspec.DecodeError as exc:
        return Invalid("body", f"malformed JSON: {exc}")
    if not isinstance(body, dict):
        return Invalid("body", f"must be a JSON object, not {type(body).__name__}")
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    fields = {field.encode_name: field for field in info.fields}
    types = typing.get_type_hints(kind, include_extras=True)
    for name, value in body.items():
        field = fields.get(name)
        if field is None:
            return Invalid(name, "is not a field of this body")
        try:
            msgspec.convert(value, type=types[field.name])
        except msgspec.ValidationError as exc:
            return Invalid(name, str(exc), **_limit(field.type, value))
    for name, field in fields.items():
        if field.required and name not in body:
            return Invalid(name, "is required")
    return Invalid("body", message)  # not reached: one of the fields is at fault


def _limit(kind: msgspec.inspect.Type, value: Any) -> dict[str, int]:
    """`{"limit": n}` when `value` is longer than its type allows (a string, a list, or an item
    of the list); else nothing."""
    if isinstance(kind, msgspec.inspect.UnionType):
        for member in kind.types:
            if found := _limit(member, value):
                return found
        return {}
    if isinstance(kind, msgspec.inspect.Metadata):
        return _limit(kind.type, value)
    if isinstance(kind, msgspec.inspect.StrType) and isinstance(value, str):
        too_long = kind.max_length is not None and len(value) > kind.max_length
        return {"limit": kind.max_length} if too_long and kind.max_length is not None else {}
    if isinstance(kind, msgspec.inspect.ListType) and isinstance(value, list):
        if kind.max_length is not None and len(value) > kind.max_length:
            return {"limit": kind.max_length}
        for item in value:
            if found := _limit(kind.item_type, item):
                return found
    return {}


class StrictBody(AbstractDTO[Any]):
    """The app's DTO for every handler's `data`: decoding by `decode`, and the body's schema in
    the OpenAPI document from the same Struct. It touches nothing else: answers are encoded by
    litestar as they are (`is_supported_model_type_field` is False for them)."""

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        """Nothing to prepare: the Struct is the handler's own annotation."""

    @classmethod
    def is_supported_model_type_field(cls, field_definition: FieldDefinition) -> bool:
        return False

    def decode_bytes(self, value: bytes) -> Any:
        field = self.asgi_connection.route_handler.parsed_data_field
        assert field is not None  # litestar asks only handlers that take `data`
        return decode(value, field.annotation)

    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: SchemaCreator
    ) -> Reference | Schema:
        return schema_creator.for_field_definition(
            FieldDefinition.from_annotation(field_definition.annotation)
        )
