"""The published feeds, each declared once in `feeds/<name>.toml` (channel, SQL, row, replay).

The websocket channels, the REST endpoints, the replay queries and the AsyncAPI document are all
built from these declarations, so publishing a new feed is a new TOML file, its SQL file and
its row's Struct in contract.py (`FEED_ROWS`):

    name = "stats"                  # unique, lower-case
    channel = "stats:{island}"      # the websocket channel; `{island}` is the island id
    path = "/api/market/stats"      # REST: the latest row, `?island=` required
    sql = "feed_stats"              # sql/<name>.sql: rows (tick, time, *fields) for $island,
                                    #   $from_tick..$to_tick, ordered by tick
    row = "TickStats"               # the contract's Struct of one row: island, tick, time, then
                                    #   the keys of `data` in order, each field's JSON Schema
                                    #   from its type (`row_schema`)
    replay_seconds = 3600           # how far back `from_tick` may reach
    description = "..."             # for the AsyncAPI document
    [trim]                          # optional: `?<param>=n` keeps the first n items of <field>
    param = "max_nodes"
    field = "rungs"
    [delta]                         # optional: an update carries the items of <field> that
    field = "rungs"                 #   changed since the tick before, each whole, and the
    key = "nodes"                   #   <key> of those gone (`Delta`)

A tick's event carries the rows the tick computed (`TickCommitted.rows`); a feed whose row is
not among them is read back from the store by its SQL after each tick (feed/feed.py).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec
from msgspec import inspect

from burstmarket.contract import FEED_ROWS, FeedRow
from burstmarket.shipped import feed_files, sql

_NAME = re.compile(r"[a-z][a-z0-9_]*")
ISLAND_PLACEHOLDER = "{island}"
ENVELOPE = tuple(FeedRow.__struct_fields__)
"""The fields of every row outside its `data`: island, tick, time."""
ROWS = {row.__name__: row for row in FEED_ROWS}


@dataclass(frozen=True, slots=True)
class Trim:
    param: str
    field: str


@dataclass(frozen=True, slots=True)
class Delta:
    """How an `update` of a feed carries one list of its `data` (docs/api.md "The feed"): the
    items that are new or changed since the channel's tick before (`changed`, each item whole,
    whatever its fields) and the keys of the items gone (`removed`), in place of the list. The
    list is ordered by `key`, so the whole list is the old one, less `removed`, with `changed`
    put in by key."""

    field: str
    key: str

    def between(self, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """`after`'s data as an update following `before`'s carries it."""
        old = {item[self.key]: item for item in before[self.field]}
        new = after[self.field]
        kept = {item[self.key] for item in new}
        return {
            **{name: value for name, value in after.items() if name != self.field},
            "changed": [item for item in new if old.get(item[self.key]) != item],
            "removed": [key for key in old if key not in kept],
        }


@dataclass(frozen=True, slots=True)
class FeedSpec:
    name: str
    channel: str
    """Channel pattern with one `{island}`, e.g. `stats:{island}`."""
    path: str
    sql: str
    row: type[FeedRow]
    replay_seconds: int
    description: str = ""
    trim: Trim | None = None
    delta: Delta | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The keys of `data`, in order: the row's fields after the envelope."""
        return self.row.__struct_fields__[len(ENVELOPE) :]

    @property
    def schema(self) -> dict[str, dict[str, Any]]:
        """JSON Schema of each key of `data`, in order."""
        return row_schema(self.row, self.fields)

    def data(self, row: FeedRow) -> dict[str, Any]:
        """A live row's `data` as JSON-ready values, the keys in order."""
        built = msgspec.to_builtins(row)
        return {field: built[field] for field in self.fields}

    def channel_for(self, island: str) -> str:
        return self.channel.replace(ISLAND_PLACEHOLDER, island)

    def island_of(self, channel: str) -> str | None:
        """The island a channel names if it is one of this feed's channels, else None."""
        prefix, _, suffix = self.channel.partition(ISLAND_PLACEHOLDER)
        if not (channel.startswith(prefix) and channel.endswith(suffix)):
            return None
        island = channel[len(prefix) : len(channel) - len(suffix)]
        return island or None


def row_schema(row: type[msgspec.Struct], fields: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each of a Struct's `fields`: its type (a nullable scalar as a list of
    types), the Meta's other keywords (`format`), its description; a list's `items`, an
    object's `properties`."""
    info = inspect.type_info(row)
    assert isinstance(info, inspect.StructType)
    return {field.name: _schema(field.type) for field in info.fields if field.name in fields}


_TYPES = {
    inspect.IntType: "integer",
    inspect.FloatType: "number",
    inspect.StrType: "string",
    inspect.BoolType: "boolean",
    inspect.NoneType: "null",
}


_OF_ITSELF = ("properties", "additionalProperties", "required", "items")
"""What a struct or list member of a union says of itself."""


def _schema(kind: inspect.Type) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    while isinstance(kind, inspect.Metadata):  # the outermost Meta's keywords win
        extra = {**(kind.extra_json_schema or {}), **extra}
        kind = kind.type
    keywords = {key: value for key, value in extra.items() if key != "description"}
    if "description" in extra:
        keywords["description"] = extra["description"]
    if isinstance(kind, inspect.UnionType):
        members = [_schema(member) for member in kind.types]
        schema = {"type": [member["type"] for member in members], **keywords}
        for member in members:  # what a struct, list or time member says of itself
            schema.update({k: v for k, v in member.items() if k in _OF_ITSELF})
        if any("enum" in member for member in members):  # a Literal or None
            schema["enum"] = [value for member in members for value in member.get("enum", [None])]
        return schema
    if isinstance(kind, inspect.DateTimeType):
        return {"type": "string", "format": "date-time", **keywords}
    if isinstance(kind, inspect.LiteralType):
        return {"type": "string", **keywords, "enum": list(kind.values)}
    if isinstance(kind, inspect.ListType):
        return {"type": "array", **keywords, "items": _schema(kind.item_type)}
    if isinstance(kind, inspect.StructType):
        # Every field is on the wire and nothing else, but those a Struct that omits defaults
        # leaves out when they hold their default.
        properties = {field.name: _schema(field.type) for field in kind.fields}
        omits = kind.cls.__struct_config__.omit_defaults
        required = [field.name for field in kind.fields if field.required or not omits]
        return {
            "type": "object",
            **keywords,
            "properties": properties,
            "additionalProperties": False,
            "required": required,
        }
    return {"type": _TYPES[type(kind)], **keywords}


def parse_spec(text: str, origin: str) -> FeedSpec:
    """One declaration; a malformed file is a packaging bug, so it raises with the file named."""
    raw = tomllib.loads(text)
    try:
        trim = raw.get("trim")
        delta = raw.get("delta")
        spec = FeedSpec(
            name=raw["name"],
            channel=raw["channel"],
            path=raw["path"],
            sql=raw["sql"],
            row=ROWS[raw["row"]],
            replay_seconds=int(raw["replay_seconds"]),
            description=raw.get("description", ""),
            trim=Trim(param=trim["param"], field=trim["field"]) if trim else None,
            delta=Delta(field=delta["field"], key=delta["key"]) if delta else None,
        )
    except KeyError as exc:
        if "row" in raw and raw["row"] not in ROWS:
            raise ValueError(f"{origin}: row must be one of {', '.join(ROWS)}") from exc
        raise ValueError(f"{origin}: missing key {exc}") from exc
    if not _NAME.fullmatch(spec.name):
        raise ValueError(f"{origin}: name must match {_NAME.pattern}")
    if spec.channel.count(ISLAND_PLACEHOLDER) != 1:
        raise ValueError(f"{origin}: channel must contain {ISLAND_PLACEHOLDER} exactly once")
    if spec.replay_seconds < 3600:
        raise ValueError(f"{origin}: replay_seconds must be at least 3600 (the last hour)")
    if not spec.fields:
        raise ValueError(f"{origin}: the row must have a field past {', '.join(ENVELOPE)}")
    if spec.trim and spec.trim.field not in spec.fields:
        raise ValueError(f"{origin}: trim field {spec.trim.field!r} is not in fields")
    if spec.delta and spec.delta.field not in spec.fields:
        raise ValueError(f"{origin}: delta field {spec.delta.field!r} is not in fields")
    sql(spec.sql)  # a declaration naming a missing SQL file fails at load, not at first use
    return spec


@cache
def load_catalog() -> tuple[FeedSpec, ...]:
    """Every `feeds/*.toml` shipped in the package, sorted by name."""
    specs = [parse_spec(text, f"feeds/{name}") for name, text in feed_files().items()]
    specs.sort(key=lambda spec: spec.name)
    for attr in ("name", "channel", "path", "row"):
        values = [getattr(spec, attr) for spec in specs]
        if len(set(values)) != len(values):
            raise ValueError(f"feeds/: duplicate {attr}")
    return tuple(specs)
