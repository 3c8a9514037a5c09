"""`burstmarket export`: the market history of a date range, as a directory of Parquet.

It reads the Parquet history the service writes (`<data dir>/history`), not the DuckDB store,
so it runs beside a live service. The copy has the same layout,
`<out>/<table>/island=<id>/month=<YYYY-MM>/<start>_<end>.parquet`, so every query written for
the history runs on it unchanged; each file appears atomically.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from burstmarket.history.layout import (
    ACCOUNT_ROWS,
    TABLES,
    month_dir,
    month_end,
    month_start,
    part_name,
    parts_between,
)
from burstmarket.store import Database, Reader


def islands(history: Path) -> list[str]:
    """Every island with `ticks` history."""
    found = (history / "ticks").glob("island=*")
    return sorted(path.name.removeprefix("island=") for path in found if path.is_dir())


def export(
    history: Path,
    out: Path,
    start: datetime,
    end: datetime,
    only: list[str] | None = None,
    on_file: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Copy the rows with `start <= time < end` of every table (of the `only` islands, if
    given) into `out`: one file per table, island and month. The files written, in order."""
    written: list[Path] = []
    # a DuckDB without a file: the export reads and writes only Parquet
    db = Database(":memory:")
    try:
        reader = Reader(db)
        # the ledger's rows of no island come with the whole history, not with one island's
        for island in only or [*islands(history), ACCOUNT_ROWS]:
            for table in TABLES:
                months: dict[datetime, list[str]] = {}
                for part in parts_between(history, table, island, start, end):
                    months.setdefault(month_start(part.start), []).append(str(part.path))
                for month, files in sorted(months.items()):
                    first, last = max(start, month), min(end, month_end(month))
                    folder = month_dir(out, table, island, month)
                    folder.mkdir(parents=True, exist_ok=True)
                    final = folder / part_name(first, last)
                    temp = final.with_suffix(".tmp")
                    params = {"files": files, "start": first, "end": last, "path": str(temp)}
                    reader.query("export_range", params)
                    os.replace(temp, final)
                    written.append(final)
                    if on_file is not None:
                        on_file(final)
    finally:
        db.close()
    return written
