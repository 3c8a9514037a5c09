"""A DuckDB of no store: in memory, its own, for reading Parquet files that are no store's (the
history's checks, record/). Nothing migrated, no writer: the caller's views and queries only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from burstmarket.store.rows import Cursor


@contextmanager
def scratch() -> Iterator[Cursor]:
    """A cursor of a fresh in-memory DuckDB, closed (and its memory freed) on exit. Like the
    store's connection, it finds no Python variable by DuckDB's replacement scan."""
    con = duckdb.connect(":memory:", config={"python_enable_replacements": False})
    try:
        yield con
    finally:
        con.close()
