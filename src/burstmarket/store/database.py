"""One DuckDB connection per process; writes serialized through one writer (datasette's shape).

Readers take `cursor()` (a new cursor on the single connection, MVCC snapshot per statement);
every write goes through `write()`, which holds the writer lock and wraps one transaction, so a
tick's rows and a tenant's declaration are each all-or-nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from burstmarket.sqlfiles import sql

log = logging.getLogger(__name__)

MIGRATIONS = ("schema_001", "schema_002")
"""sql/ files applied in order; the index + 1 is the schema version they bring the store to."""


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._con = duckdb.connect(str(self.path))
        self._writer = self._con.cursor()
        self._lock = threading.Lock()
        self._migrate()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor for one reader (one thread); close it when done."""
        return self._con.cursor()

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The writer inside one transaction: committed on exit, rolled back on any error."""
        with self._lock:
            cur = self._writer
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._writer.close()
            self._con.close()

    def _migrate(self) -> None:
        with self.write() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
            current = (row[0] if row else None) or 0
            for version, name in enumerate(MIGRATIONS, start=1):
                if version > current:
                    log.info("store: migrating %s to schema %d", self.path, version)
                    cur.execute(sql(name))
                    cur.execute("INSERT INTO schema_version VALUES ($v)", {"v": version})
