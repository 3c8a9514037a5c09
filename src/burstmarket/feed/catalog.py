"""The published feeds, each declared once in `feeds/<name>.toml` (channel, SQL, fields, replay).

The websocket channels, the REST endpoints, the replay queries and the AsyncAPI document are all
built from these declarations, so publishing a new feed is a new TOML file plus its SQL file:

    name = "stats"                  # unique, lower-case
    channel = "stats:{island}"      # the websocket channel; `{island}` is the island id
    path = "/api/market/stats"      # REST: the latest row, `?island=` required
    sql = "feed_stats"              # sql/<name>.sql: rows (tick, time, *fields) for $island,
                                    #   $from_tick..$to_tick, ordered by tick
    event = "stats"                 # optional: the TickCommitted attribute holding the live row;
                                    #   without it the SQL is run for each committed tick
    replay_seconds = 3600           # how far back `from_tick` may reach
    description = "..."             # for the AsyncAPI document
    [fields]                        # the keys of `data`, in order, each with its JSON Schema
    vwap = { type = ["number", "null"] }
    [trim]                          # optional: `?<param>=n` keeps the first n items of <field>
    param = "max_nodes"
    field = "rungs"
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from burstmarket.shipped import feed_files, sql

_NAME = re.compile(r"[a-z][a-z0-9_]*")
ISLAND_PLACEHOLDER = "{island}"


@dataclass(frozen=True, slots=True)
class Trim:
    param: str
    field: str


@dataclass(frozen=True, slots=True)
class FeedSpec:
    name: str
    channel: str
    """Channel pattern with one `{island}`, e.g. `stats:{island}`."""
    path: str
    sql: str
    schema: dict[str, dict[str, Any]]
    """JSON Schema of each key of `data`, in order."""
    replay_seconds: int
    description: str = ""
    event: str | None = None
    trim: Trim | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.schema)

    def channel_for(self, island: str) -> str:
        return self.channel.replace(ISLAND_PLACEHOLDER, island)

    def island_of(self, channel: str) -> str | None:
        """The island a channel names if it is one of this feed's channels, else None."""
        prefix, _, suffix = self.channel.partition(ISLAND_PLACEHOLDER)
        if not (channel.startswith(prefix) and channel.endswith(suffix)):
            return None
        island = channel[len(prefix) : len(channel) - len(suffix)]
        return island or None


def parse_spec(text: str, origin: str) -> FeedSpec:
    """One declaration; a malformed file is a packaging bug, so it raises with the file named."""
    raw = tomllib.loads(text)
    try:
        trim = raw.get("trim")
        spec = FeedSpec(
            name=raw["name"],
            channel=raw["channel"],
            path=raw["path"],
            sql=raw["sql"],
            schema=dict(raw["fields"]),
            replay_seconds=int(raw["replay_seconds"]),
            description=raw.get("description", ""),
            event=raw.get("event"),
            trim=Trim(param=trim["param"], field=trim["field"]) if trim else None,
        )
    except KeyError as exc:
        raise ValueError(f"{origin}: missing key {exc}") from exc
    if not _NAME.fullmatch(spec.name):
        raise ValueError(f"{origin}: name must match {_NAME.pattern}")
    if spec.channel.count(ISLAND_PLACEHOLDER) != 1:
        raise ValueError(f"{origin}: channel must contain {ISLAND_PLACEHOLDER} exactly once")
    if spec.replay_seconds < 3600:
        raise ValueError(f"{origin}: replay_seconds must be at least 3600 (the last hour)")
    if not spec.schema:
        raise ValueError(f"{origin}: fields must name at least one key")
    if spec.trim and spec.trim.field not in spec.fields:
        raise ValueError(f"{origin}: trim field {spec.trim.field!r} is not in fields")
    sql(spec.sql)  # a declaration naming a missing SQL file fails at load, not at first use
    return spec


@cache
def load_catalog() -> tuple[FeedSpec, ...]:
    """Every `feeds/*.toml` shipped in the package, sorted by name."""
    specs = [parse_spec(text, f"feeds/{name}") for name, text in feed_files().items()]
    specs.sort(key=lambda spec: spec.name)
    for attr in ("name", "channel", "path"):
        values = [getattr(spec, attr) for spec in specs]
        if len(set(values)) != len(values):
            raise ValueError(f"feeds/: duplicate {attr}")
    return tuple(specs)
