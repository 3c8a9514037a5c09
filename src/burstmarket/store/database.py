"""One DuckDB connection per process; writes serialized through one writer (datasette's shape).

Readers take `cursor()` (a new cursor on the single connection, MVCC snapshot per statement, or
per transaction when the reader opens one). Every write holds the writer lock: `write()` wraps one
transaction, so a tick's rows and an operator's change are each all-or-nothing; `submit()` hands a
small job to the group-commit writer (store/writer.py), which runs many jobs in one transaction.
`epoch` counts finished write transactions, so an in-memory copy of store state can tell whether
anything was written since it was taken.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

import duckdb

from burstmarket.sqlfiles import sql
from burstmarket.store.writer import Batch, GroupWriter

T = TypeVar("T")

log = logging.getLogger(__name__)

MIGRATIONS = ("schema_001", "schema_002", "schema_003", "schema_004")
"""sql/ files applied in order; the index + 1 is the schema version they bring the store to."""


PRIVATE_UMASK = 0o077
"""The store is the tenants' ledger: `serve` and `simulate` run under this umask, so its file,
its WAL and the history beside it are created 0600 (DuckDB recreates the WAL after every
checkpoint, so a chmod of the files would not hold)."""

_HOLDER = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")


class StoreOpenError(Exception):
    """The store's file cannot be opened: one line for the operator, naming the directory."""


def _open(path: Path) -> duckdb.DuckDBPyConnection:
    """The store's one connection, or StoreOpenError saying why not (another process holds the
    file, the directory is read-only...), never a traceback."""
    where = path.parent.resolve()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # DuckDB writes its WAL (and the feed its history) beside the file: a read-only
        # directory must stop the start, not the first write
        tempfile.TemporaryFile(dir=where).close()
    except OSError as exc:
        raise StoreOpenError(
            f"cannot use the data directory {where}: {exc.strerror or exc}"
        ) from None
    try:
        return duckdb.connect(str(path))
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        holder = _HOLDER.search(message)
        if holder is not None:
            raise StoreOpenError(
                f"the data directory {where} is in use: {path.name} is held by "
                f"process {holder.group(2)} ({holder.group(1)})"
            ) from None
        raise StoreOpenError(f"cannot open the store in {where}: {message}") from None


class Database:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._con = _open(self.path)
        self._writer = self._con.cursor()
        # reentrant: a tick holds it across its commit and the bookkeeping right after
        self._lock = threading.RLock()
        self.epoch = 0
        """Write transactions finished (committed or rolled back); read it holding the writer."""
        self._group = GroupWriter(self)
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
                cur.execute("COMMIT")
            except BaseException:
                # after a failed COMMIT (a full disk) DuckDB has rolled back already
                with suppress(duckdb.TransactionException):
                    cur.execute("ROLLBACK")
                raise
            finally:
                self.epoch += 1

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the writer across several steps (a transaction and what must follow its commit
        before any other write runs)."""
        with self._lock:
            yield

    def submit(self, job: Callable[[Batch], T]) -> Future[T]:
        """Run `job` in the next group commit; the future resolves once its batch is committed
        (durable), with the job's result or the MarketError it refused with."""
        return self._group.submit(job)

    def queued(self) -> int:
        """Jobs waiting for the group-commit writer."""
        return self._group.queued()

    def schema_version(self) -> int:
        """The store's schema version, read from the store (so it also tells that the store
        answers)."""
        cur = self.cursor()
        try:
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
        finally:
            cur.close()
        return int(row[0]) if row and row[0] is not None else 0

    def close(self) -> None:
        self._group.stop()
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
