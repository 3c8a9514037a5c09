"""`GET /api/market/series`: candles of the per-tick vwap, in SQL over live rows and history.

The query is `sql/series_candles.sql`; Python only checks the parameters, lists the history
parts that overlap the range (so old months are never opened) and shapes the answer as JSON,
CSV or an Arrow IPC stream. Arrow keeps the exact DECIMAL(18,6) prices; JSON and CSV give them
as numbers with at most 6 decimals.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec
import pyarrow as pa

from burstmarket.clock import parse_time
from burstmarket.contract import Candle
from burstmarket.errors import Invalid
from burstmarket.feed.messages import display, rfc3339
from burstmarket.history.layout import floor_time, parts_between
from burstmarket.store import Reader

Interval = Literal["1m", "5m", "15m", "30m", "1h", "1d"]
Format = Literal["json", "csv", "arrow"]
INTERVALS: dict[Interval, timedelta] = {
    "1m": timedelta(minutes=1),
    "5m": timedelta(minutes=5),
    "15m": timedelta(minutes=15),
    "30m": timedelta(minutes=30),
    "1h": timedelta(hours=1),
    "1d": timedelta(days=1),
}
FORMATS: dict[Format, str] = {
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "arrow": "application/vnd.apache.arrow.stream",
}
assert tuple(INTERVALS) == get_args(Interval)
assert tuple(FORMATS) == get_args(Format)
DEFAULT_LIMIT = 500
MAX_LIMIT = 10_000
COLUMNS = Candle.__struct_fields__
"""A candle's columns, in the order of the SQL's (contract.Candle, the JSON answer's type)."""
_EMPTY_HISTORY = (
    "(SELECT tick, time, vwap, min, max, gpus, reserve_price, tick_seconds FROM ticks WHERE false)"
)
_HISTORY = (
    # by name, with a typed empty relation: parts written before `tick_seconds` read NULL there
    "(SELECT NULL::DECIMAL(12, 3) AS tick_seconds WHERE false) UNION ALL BY NAME "
    "(SELECT * FROM read_parquet($history_files, hive_partitioning = false, union_by_name = true))"
)


@dataclass(frozen=True, slots=True)
class SeriesQuery:
    island: str
    width: timedelta
    start: datetime
    end: datetime
    limit: int
    format: Format
    open_bucket: datetime
    """The bucket the latest tick is in: its candle is still open."""

    @classmethod
    def of(
        cls,
        island: str,
        latest: datetime,
        interval: Interval,
        limit: int,
        fmt: Format,
        start: str | None,
        end: str | None,
    ) -> SeriesQuery:
        """The range asked for (the handler's signature checked each parameter's type and
        range); without `end`, it ends with the latest tick's bucket and reaches `limit` buckets
        back."""
        width = INTERVALS[interval]
        last = floor_time(latest, width) + width if end is None else parse_time("end", end)
        first = last - width * limit if start is None else parse_time("start", start)
        if first >= last:
            raise Invalid("start", "must be before end", start=rfc3339(first), end=rfc3339(last))
        return cls(island, width, first, last, limit, fmt, floor_time(latest, width))


def candles(store: Reader, history: Path, query: SeriesQuery, tick_seconds: float) -> pa.Table:
    """The candles as an Arrow table (blocking: run it in a worker thread). `tick_seconds`, the
    configured interval, counts the ticks of history parts written before ticks recorded theirs."""
    files = [
        str(part.path)
        for part in parts_between(history, "ticks", query.island, query.start, query.end)
    ]
    source = f"({_HISTORY})" if files else _EMPTY_HISTORY
    params: dict[str, Any] = {
        "island": query.island,
        "start": query.start,
        "end": query.end,
        "width": query.width,
        "limit": query.limit,
        "tick_seconds": tick_seconds,
        # naive UTC, as the SQL buckets are
        "open_bucket": query.open_bucket.astimezone(UTC).replace(tzinfo=None),
    }
    if files:
        params["history_files"] = files
    table = store.arrow("series_candles", params, parts={"history_ticks": source})
    # The bucket start is naive UTC in SQL (bucketing never depends on the session time zone).
    return table.set_column(0, "start", table.column("start").cast(pa.timestamp("us", tz="UTC")))


def render(table: Any, fmt: str) -> bytes:
    if fmt == "arrow":
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue()
    rows = _display_rows(table)
    if fmt == "csv":
        out = io.StringIO()
        writer_ = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer_.writeheader()
        # Booleans as JSON and the Arrow stream spell them (`closed`), not Python's True/False.
        writer_.writerows({k: _csv_value(v) for k, v in row.items()} for row in rows)
        return out.getvalue().encode()
    return msgspec.json.encode(rows)


def _csv_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _display_rows(table: Any) -> list[dict[str, Any]]:
    """Rows with RFC 3339 starts and float prices (6 decimals at most). Decimals go through
    Python's correctly rounded `float(Decimal)`: Arrow's decimal-to-double cast is not."""
    columns = {name: table.column(name).to_pylist() for name in COLUMNS}
    columns["start"] = [rfc3339(value) for value in columns["start"]]
    return [
        {name: display(value) for name, value in zip(COLUMNS, values, strict=True)}
        for values in zip(*columns.values(), strict=True)
    ]
