"""One-shot reads of the store for the market-data layer (feed, series, history, export).

Each call is blocking DuckDB work on a cursor of its own (store/rows.py on `Database.read()`);
callers on the event loop run it in a worker thread (`asyncio.to_thread`) so the loop never
waits on the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from burstmarket.store.database import Database
from burstmarket.store.rows import fetch_tuples, query_arrow


class Reader:
    def __init__(self, db: Database) -> None:
        self._db = db

    def query(self, name: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of `sql/<name>.sql` with named parameters (or what a COPY reports)."""
        with self._db.read() as cur:
            return fetch_tuples(cur, name, params)

    def arrow(
        self, name: str, params: Mapping[str, Any], parts: Mapping[str, str] | None = None
    ) -> pa.Table:
        """The result of `sql/<name>.sql` as an Arrow table (store/rows.py `query_arrow`)."""
        with self._db.read() as cur:
            return query_arrow(cur, name, params, parts)
