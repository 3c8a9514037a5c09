"""The one place a request body becomes its Struct (contract.py), or an `invalid` refusal
naming the field.

Handlers declare `data: <Struct>`; litestar hands the raw body to `StrictBody` (the app's DTO),
which decodes it strictly with msgspec: the JSON text straight into the Struct, money read as a
Decimal digit for digit, after the one check of how deep it nests (nesting.py, the feed's too).
When decoding fails, msgspec's message says what is wrong but not, as data, where: the body is
split into its fields, each still the JSON text the client wrote, and each decoded on its own
as its type (a list of Structs item by item, so `cells[2].term_hours` is named), so the refusal
names the field (and the length `limit` it went past, from the type's `msgspec.Meta`) from the
Struct's own description, never by reading the error's text.

The handler hands the Struct to the market's desk, which turns its money into integer
micro-dollars, refused, never rounded, off the grid or range (market/desks/inputs.py).
"""

from __future__ import annotations

import typing
from typing import Any, TypeVar

import msgspec
from litestar.dto import AbstractDTO
from litestar.typing import FieldDefinition

from burstmarket.errors import Invalid
from burstmarket.nesting import check_nesting

if typing.TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Reference, Schema

T = TypeVar("T")

_fields = msgspec.json.Decoder(dict[str, msgspec.Raw])
"""A JSON object's fields, each as the text the client wrote (checked on exactly that)."""
_items = msgspec.json.Decoder(list[msgspec.Raw])


def decode(raw: bytes, kind: type[T]) -> T:
    """`raw` as a `kind`; Invalid naming the field otherwise."""
    check_nesting(raw, "body")
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.DecodeError as exc:  # ValidationError included
        _refusal(raw, kind, "", str(exc))


def _refusal(raw: bytes | msgspec.Raw, kind: type[Any], path: str, message: str) -> typing.NoReturn:
    """Which field of `kind` the JSON object `raw` (the body, or an item of one of its lists:
    `path` names it) got wrong: each one decoded on its own, in the order the body gives them,
    then the required ones it left out."""
    where = path.removesuffix(".") or "body"
    try:
        body = _fields.decode(raw)
    except msgspec.ValidationError as exc:
        raise Invalid(where, f"must be a JSON object: {exc}") from None
    except msgspec.DecodeError as exc:
        raise Invalid(where, f"malformed JSON: {exc}") from None
    info = msgspec.inspect.type_info(kind)
    assert isinstance(info, msgspec.inspect.StructType)
    fields = {field.encode_name: field for field in info.fields}
    types = typing.get_type_hints(kind, include_extras=True)
    for name, text in body.items():
        field = fields.get(name)
        if field is None:
            raise Invalid(path + name, "is not a field of this body")
        try:
            msgspec.json.decode(text, type=types[field.name])
        except msgspec.ValidationError as exc:
            _refuse_item(text, field.type, path + name)
            raise Invalid(path + name, str(exc), **_limit(field.type, text)) from None
    for name, field in fields.items():
        if field.required and name not in body:
            raise Invalid(path + name, "is required")
    raise Invalid(where, message)  # not reached: one of the fields is at fault


def _refuse_item(text: msgspec.Raw, kind: msgspec.inspect.Type, name: str) -> None:
    """For a list of Structs (`cells`), the item at fault and its field, if it is an item."""
    if isinstance(kind, msgspec.inspect.Metadata):
        kind = kind.type
    if not isinstance(kind, msgspec.inspect.ListType):
        return
    item = kind.item_type
    if not isinstance(item, msgspec.inspect.StructType):
        return
    try:
        texts = _items.decode(text)
    except msgspec.DecodeError:
        return  # not a list: the field as a whole
    for i, one in enumerate(texts):
        try:
            msgspec.json.decode(one, type=item.cls)
        except msgspec.ValidationError as exc:
            _refusal(one, item.cls, f"{name}[{i}].", str(exc))


def _limit(kind: msgspec.inspect.Type, text: msgspec.Raw) -> dict[str, int]:
    """`{"limit": n}` when the value is longer than its type allows; else nothing."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:  # a number out of any range: no length to it
        return {}
    return _length_limit(kind, value)


def _length_limit(kind: msgspec.inspect.Type, value: Any) -> dict[str, int]:
    """`{"limit": n}` when `value` is longer than its type allows (a string, a list, or an item
    of the list); else nothing."""
    if isinstance(kind, msgspec.inspect.UnionType):
        for member in kind.types:
            if found := _length_limit(member, value):
                return found
        return {}
    if isinstance(kind, msgspec.inspect.Metadata):
        return _length_limit(kind.type, value)
    if isinstance(kind, msgspec.inspect.StrType) and isinstance(value, str):
        too_long = kind.max_length is not None and len(value) > kind.max_length
        return {"limit": kind.max_length} if too_long and kind.max_length is not None else {}
    if isinstance(kind, msgspec.inspect.ListType) and isinstance(value, list):
        if kind.max_length is not None and len(value) > kind.max_length:
            return {"limit": kind.max_length}
        for item in value:
            if found := _length_limit(kind.item_type, item):
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
