"""One DuckDB connection per process; writes serialized through one writer (datasette's shape).

Readers take `read()` (a new cursor on the single connection, an MVCC snapshot per statement) or
`snapshot()` (one snapshot for several reads). Every write holds the writer lock: `write()` wraps
one transaction, so a tick's rows and an operator's change are each all-or-nothing; `submit()`
hands a small job to the group-commit writer (store/writer.py), which runs many jobs in one
transaction. `epoch` counts finished write transactions, so an in-memory copy of store state can
tell whether anything was written since it was taken. What the cursors run goes through
store/rows.py.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import duckdb

from burstmarket.shipped import migrations, sql
from burstmarket.store.rows import Cursor, fetch_tuples, forget_batches
from burstmarket.store.table import Table
from burstmarket.store.writer import Batch, GroupWriter

T = TypeVar("T")

log = logging.getLogger(__name__)

MIGRATIONS = migrations()
"""sql/schema_NNN.sql applied in order; the index + 1 is the schema version they bring the
store to. A new migration is a new file, found by its name."""


PRIVATE_UMASK = 0o077
"""The store is the tenants' ledger: `serve` and `simulate` run under this umask, so its file,
its WAL and the history beside it are created 0600 (DuckDB recreates the WAL after every
checkpoint, so a chmod of the files would not hold)."""

CLOSE_WAIT_SECONDS = 10.0
"""How long closing the store waits for readers still running a statement."""

_HOLDER = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")


class StoreOpenError(Exception):
    """The store's file cannot be opened: one line for the operator, naming the directory."""


class TableDriftError(StoreOpenError):
    """The store's tables are not the ones defined (store/table.py): every difference, named,
    in the one line `serve` prints before it stops."""


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
        # A statement reads an Arrow batch only by the name it is registered under
        # (store/rows.py), never a variable of its caller's found by DuckDB's replacement scan.
        return duckdb.connect(str(path), config={"python_enable_replacements": False})
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

    def cursor(self) -> Cursor:
        """A new cursor for one reader (one thread); close it when done (or use `read()`)."""
        return self._con.cursor()

    @contextmanager
    def read(self) -> Iterator[Cursor]:
        """A reader's own cursor, closed on exit."""
        cur = self.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def snapshot(self) -> Snapshot:
        """A cursor whose reads all see the store as it is now, until its `with` block ends.
        Call it holding the writer (`held()`) to take it between two writes."""
        return Snapshot(self.cursor())

    @contextmanager
    def write(self) -> Iterator[Cursor]:
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
                forget_batches(cur)
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
        with self.read() as cur:
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def close(self) -> None:
        self._group.stop()
        with self._lock:
            self._writer.close()
            self._close_connection()

    def _close_connection(self) -> None:
        """Close the connection once no cursor of it is running a statement: DuckDB refuses to
        close it under a reader still at work (one the feed's shutdown left running)."""
        deadline = time.monotonic() + CLOSE_WAIT_SECONDS
        while True:
            try:
                self._con.close()
                return
            except duckdb.OperationalError:  # busy: its readers finish their statements
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def check_tables(self, tables: Iterable[Table[Any]]) -> None:
        """TableDriftError unless the store holds exactly `tables` (every table but the
        migrations' own `schema_version`): the same columns, types and nullability."""
        found: dict[str, dict[str, tuple[str, bool]]] = {}
        with self.read() as cur:
            for table, column, kind, null in fetch_tuples(cur, "store_columns", {}):
                found.setdefault(table, {})[column] = (kind, null)
        found.pop("schema_version", None)
        defined = {t.name: t for t in tables}
        drift = [f"table {name} is not defined" for name in found if name not in defined]
        for name, table in defined.items():
            drift += table.drift(found[name]) if name in found else [f"no table {name}"]
        if drift:
            raise TableDriftError(f"{self.path}: " + "; ".join(drift))

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


class Snapshot:
    """A read transaction, begun on creation: `with snapshot as cur:` reads it, then ends it."""

    def __init__(self, cur: Cursor) -> None:
        self._cur = cur
        try:
            cur.execute("BEGIN TRANSACTION")
            # DuckDB starts a transaction at its first read of the database: this one pins it
            cur.execute("SELECT count(*) FROM schema_version").fetchall()
        except BaseException:
            cur.close()
            raise

    def __enter__(self) -> Cursor:
        return self._cur

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc is None:
                self._cur.execute("COMMIT")
            else:
                with suppress(duckdb.Error):
                    self._cur.execute("ROLLBACK")
        finally:
            self._cur.close()
