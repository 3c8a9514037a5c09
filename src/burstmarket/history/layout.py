"""Where history lives: `<root>/<table>/island=<id>/month=<YYYY-MM>/<start>_<end>.parquet`.

A part's name is the half-open span of market time it covers (UTC, `20250131T235500Z`). Parts
never cross a UTC day, so compaction merges whole days, then whole months. Only files ending in
`.parquet` are data: anything being written carries another suffix until its atomic rename.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

TABLES = (
    "cluster_rates",
    "allocations",
    "ladder",
    "receipts",
    "ledger",
    "verdicts",
    "pending",
    "bids",
    "islands",
    "demand",
    "ticks",
)
"""Exported in this order: `ticks` last, so its parts say how far an island is exported."""

ACCOUNT_ROWS = "__HIVE_DEFAULT_PARTITION__"
"""The `island=` partition of the ledger rows that belong to no island (an account's deposits,
its wires): Hive's name for a NULL partition value, so `hive_partitioning` reads their island
as NULL, and no island id can take it from them (an id is a name; this one is reserved)."""

WINDOW = timedelta(minutes=5)
"""History is written for every closed window of this much market time."""

_STAMP = "%Y%m%dT%H%M%SZ"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def floor_time(value: datetime, step: timedelta) -> datetime:
    """The start of the UTC-aligned `step` that holds `value`."""
    return _EPOCH + ((value - _EPOCH) // step) * step


def day_end(value: datetime) -> datetime:
    return floor_time(value, timedelta(days=1)) + timedelta(days=1)


def month_start(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_end(value: datetime) -> datetime:
    start = month_start(value)
    return (start + timedelta(days=32)).replace(day=1)


@dataclass(frozen=True, slots=True, order=True)
class Part:
    start: datetime
    end: datetime
    path: Path

    @classmethod
    def parse(cls, path: Path) -> Part | None:
        """The part a file name describes, or None for anything that is not a part."""
        first, sep, last = path.stem.partition("_")
        if path.suffix != ".parquet" or not sep:
            return None
        try:
            start = datetime.strptime(first, _STAMP).replace(tzinfo=UTC)
            end = datetime.strptime(last, _STAMP).replace(tzinfo=UTC)
        except ValueError:
            return None
        return cls(start, end, path) if start < end else None


def part_name(start: datetime, end: datetime) -> str:
    return f"{start.astimezone(UTC):{_STAMP}}_{end.astimezone(UTC):{_STAMP}}.parquet"


def island_dir(root: Path, table: str, island: str) -> Path:
    return root / table / f"island={island}"


def month_dir(root: Path, table: str, island: str, when: datetime) -> Path:
    return island_dir(root, table, island) / f"month={when.astimezone(UTC):%Y-%m}"


def parts(root: Path, table: str, island: str) -> list[Part]:
    """Every part of one table and island, by start time."""
    found = (Part.parse(path) for path in island_dir(root, table, island).glob("month=*/*"))
    return sorted(part for part in found if part is not None)


def parts_between(
    root: Path, table: str, island: str, start: datetime, end: datetime
) -> list[Part]:
    """The parts that may hold rows with `start <= time < end`."""
    return [part for part in parts(root, table, island) if part.start < end and part.end > start]


def exported_through(root: Path, island: str) -> datetime | None:
    """Market time up to which the island is fully exported (the end of its last `ticks` part)."""
    found = parts(root, "ticks", island)
    return max(part.end for part in found) if found else None
