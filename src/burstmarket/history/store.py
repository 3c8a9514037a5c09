"""Reading the service's DuckDB store: the only two shapes of access the market-data layer uses.

Every call is blocking DuckDB work on a fresh cursor; callers on the event loop run it in a worker
thread (`asyncio.to_thread`) so the loop never waits on the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from burstmarket.sqlfiles import sql


class Cursor(Protocol):
    """The part of a DuckDB cursor the market-data layer uses."""

    def execute(self, query: str, parameters: object = ..., /) -> Cursor: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...
    def sql(self, query: str, *, alias: str = ..., params: object = ...) -> Any: ...
    def close(self) -> None: ...


class Database(Protocol):
    """The service's store: a new cursor per reader on its single connection."""

    def cursor(self) -> Cursor: ...


class StoreReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    def query(self, name: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of `sql/<name>.sql` with named parameters."""
        cur = self._db.cursor()
        try:
            return cur.execute(sql(name), params).fetchall()
        finally:
            cur.close()

    def arrow(self, text: str, params: Mapping[str, Any]) -> Any:
        """The result of one statement as an Arrow table."""
        cur = self._db.cursor()
        try:
            # A relation straight to Arrow: no row-by-row copy of a DB-API result.
            return cur.sql(text, params=dict(params)).to_arrow_table()
        finally:
            cur.close()
