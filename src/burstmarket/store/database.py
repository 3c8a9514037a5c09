"""One DuckDB connection per process; writes serialized through one writer (datasette's shape).

Readers take `read()` (a new cursor on the single connection, an MVCC snapshot per statement) or
`snapshot()` (one snapshot for several reads). Every write holds the writer lock: `write()` wraps
one transaction, so a tick's rows and an operator's change are each all-or-nothing; `submit()`
hands a small job to the group-commit writer (store/writer.py), which runs many jobs in one
transaction. `epoch` counts finished write transactions, so an in-memory copy of store state can
tell whether anything was written since it was taken. What the cursors run goes through
store/rows.py.

Checkpoints, and a full disk. A commit writes its changes to the write-ahead log; a checkpoint
folds the log into the file. DuckDB would checkpoint inside a COMMIT, and a checkpoint that fails
(no room for the file to grow) leaves that commit in doubt and the connection invalidated for
good. So the store checkpoints itself, right after a commit, once the log has grown past
`checkpoint_bytes`: every commit's outcome is known when it returns. A failed checkpoint loses
nothing (the log holds every commit); it invalidates the connection, and the store reopens it at
its next use, once no reader holds a cursor of the old one (DuckDB replays the log at open).
Until then every use is refused `StoreUnavailable` (503) at once; nothing is written twice, as
nothing in doubt was ever answered.
"""

from __future__ import annotations

import logging
import os
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

from burstmarket.errors import StoreUnavailable
from burstmarket.shipped import migrations, sql
from burstmarket.store import journal
from burstmarket.store.faults import first_line
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

CHECKPOINT_BYTES = 16 * 1024 * 1024
"""The write-ahead log's size past which the store checkpoints (DuckDB's own default)."""
CHECKPOINT_RETRY_SECONDS = 30.0
"""After a failed checkpoint, how long the store waits before it tries one again (commits go on
meanwhile, into the log): each failure costs a reopen, a second or so of refusals."""
REOPEN_RETRY_SECONDS = 1.0
"""After a failed reopen, how long the store waits before it tries again (refusing meanwhile)."""
READERS_WAIT_SECONDS = 2.0
"""How long a reopen waits for the readers still holding a cursor of the old connection."""
DUCKDB_CHECKPOINTS_OFF = "1000TB"
"""DuckDB's own checkpoint threshold: never reached, so it never checkpoints inside a COMMIT."""
STATEMENT_THREADS = 1
"""DuckDB threads per statement. The store's statements are small (DuckDB splits a scan only per
row group of 122,880 rows, so a market's tables give it no work to share) and run many at a
time, one per request and the tick's; handing each to a thread pool cost more than it saved:
on one thread `bench/bench_tick.py` measured the tick's own work 20-25 % cheaper and `simulate`
used 10 % less CPU (docs/service.md gives the figures)."""

PLANNING_SKIPPED = "statistics_propagation"
"""DuckDB optimizers the store turns off. Its statements read a few hundred rows each; planning
them with statistics propagation (and the compressed sort it enables) cost more than running
them: a trivial tick is ~22 statements at a floor of about a millisecond each, and without it
the island reads took 0.75 ms instead of 1.19 and 360 ticks of a server 14 % less wall time
(docs/service.md). Every optimizer preserves results, so only the time changes."""

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
        # The store checkpoints itself (Database._checkpoint_if_due), never DuckDB in a COMMIT.
        return duckdb.connect(
            str(path),
            config={
                "python_enable_replacements": False,
                "checkpoint_threshold": DUCKDB_CHECKPOINTS_OFF,
                "threads": STATEMENT_THREADS,
                "disabled_optimizers": PLANNING_SKIPPED,
            },
        )
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
    def __init__(self, path: Path | str, checkpoint_bytes: int = CHECKPOINT_BYTES) -> None:
        self.path = Path(path)
        self._wal = self.path.with_name(self.path.name + ".wal")
        self._checkpoint_bytes = checkpoint_bytes
        self.migrated: tuple[int, int] | None = None
        """(from, to) when opening it migrated the store, else None."""
        self._checkpoint_after = 0.0
        """Monotonic time before which no checkpoint is tried (one just failed)."""
        self._con = _open(self.path)
        self._writer = self._con.cursor()
        # reentrant: a tick holds it across its commit and the bookkeeping right after
        self._lock = threading.RLock()
        self.epoch = 0
        """Write transactions finished (committed or rolled back); read it holding the writer."""
        self._cursors = threading.Lock()
        """Guards the two below and the connection's swap (a leaf lock)."""
        self._readers = 0
        """Cursors of `read()` and `snapshot()` not closed yet: the old connection is reopened
        only once none is left (DuckDB would hand its invalidated instance back)."""
        self._fault: str | None = None
        """Why the connection is invalidated (a failed checkpoint), until it is reopened."""
        self._reopen_after = 0.0
        self._group = GroupWriter(self)
        self._migrate()

    def cursor(self) -> Cursor:
        """A new cursor (tests' own reads); the service reads through `read()`/`snapshot()`."""
        return self._con.cursor()

    @contextmanager
    def read(self) -> Iterator[Cursor]:
        """A reader's own cursor, closed on exit."""
        cur = self._reader()
        try:
            yield cur
        except duckdb.FatalException as exc:
            self._invalidated(exc)
            raise
        finally:
            self._release(cur)

    def snapshot(self) -> Snapshot:
        """A cursor whose reads all see the store as it is now, until its `with` block ends.
        Call it holding the writer (`held()`) to take it between two writes."""
        return Snapshot(self._reader(), self._release, self._invalidated)

    @contextmanager
    def write(self) -> Iterator[Cursor]:
        """The writer inside one transaction: committed on exit, rolled back on any error."""
        with self._lock:
            self._usable()
            cur = self._writer
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
                # the request this transaction serves, recorded with its change (journal.py)
                recorded = journal.write(cur, journal.current())
                cur.execute("COMMIT")
                if recorded is not None:
                    recorded()
            except BaseException as exc:
                # after a failed COMMIT (a full disk) DuckDB has rolled back already
                with suppress(duckdb.Error):
                    cur.execute("ROLLBACK")
                forget_batches(cur)
                if isinstance(exc, duckdb.FatalException):
                    self._invalidated(exc)
                raise
            finally:
                self.epoch += 1
            self._checkpoint_if_due()

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
            if current < len(MIGRATIONS):  # api/app.py says it, after the banner
                self.migrated = (current, len(MIGRATIONS))
            for version, name in enumerate(MIGRATIONS, start=1):
                if version > current:
                    cur.execute(sql(name))
                    cur.execute("INSERT INTO schema_version VALUES ($v)", {"v": version})

    # --- a failed checkpoint, and the reopen after it ------------------------------------------

    def _reader(self) -> Cursor:
        """A counted cursor for `read()` or `snapshot()` (StoreUnavailable while the store is
        down)."""
        while True:
            with self._cursors:
                if self._fault is None:
                    self._readers += 1
                    return self._con.cursor()
            self._reopen()

    def _release(self, cur: Cursor) -> None:
        try:
            cur.close()
        finally:
            with self._cursors:
                self._readers -= 1

    def _usable(self) -> None:
        """Return once the connection is valid (reopened if it had to be; call it holding the
        writer), else StoreUnavailable."""
        if self._fault is not None:
            self._reopen()

    def _checkpoint_if_due(self) -> None:
        """Fold the log into the file once it has grown past `checkpoint_bytes` (holding the
        writer, right after a commit). A failure is logged, never raised: the commit before it
        stands, and is in the log."""
        try:
            size = os.stat(self._wal).st_size
        except OSError:  # no log (nothing written since the last checkpoint, or in memory)
            return
        if size < self._checkpoint_bytes or time.monotonic() < self._checkpoint_after:
            return
        try:
            self._writer.execute("CHECKPOINT")
        except duckdb.Error as exc:
            self._checkpoint_after = time.monotonic() + CHECKPOINT_RETRY_SECONDS
            log.warning("store: checkpoint failed, every commit is in the log: %s", first_line(exc))
            if isinstance(exc, duckdb.FatalException):
                self._invalidated(exc)

    def _invalidated(self, exc: BaseException) -> None:
        """DuckDB invalidated the connection (after a failed checkpoint): refuse every use
        until it is reopened."""
        with self._cursors:
            if self._fault is None:
                self._fault = first_line(exc)
                log.warning("store: the connection is invalidated; it reopens at its next use")

    def _reopen(self) -> None:
        """Reopen the invalidated connection, or raise StoreUnavailable: while the writer is
        busy (its holder reopens it), within REOPEN_RETRY_SECONDS of a failed try, or while a
        reader still holds a cursor of the old connection past READERS_WAIT_SECONDS."""
        fault = self._fault
        if fault is None:
            return
        refused = StoreUnavailable(f"the store is reopening after: {fault}", 1)
        if time.monotonic() < self._reopen_after or not self._lock.acquire(blocking=False):
            raise refused
        try:
            if self._fault is None:  # reopened meanwhile by the writer's last holder
                return
            if not self._readers_gone():
                raise refused
            # no reader can start now: `_reader` gives none out while the fault stands
            forget_batches(self._writer)
            for old in (self._writer, self._con):
                with suppress(duckdb.Error):
                    old.close()
            try:
                con = _open(self.path)
            except StoreOpenError as exc:
                self._reopen_after = time.monotonic() + REOPEN_RETRY_SECONDS
                log.warning("store: reopening failed (%s); it tries again", exc)
                raise refused from None
            with self._cursors:
                self._con, self._writer = con, con.cursor()
                self._fault = None
            self.epoch += 1  # in-memory copies of the store are read again (market/hot.py)
            log.warning("store: reopened %s after: %s", self.path, fault)
        finally:
            self._lock.release()

    def _readers_gone(self) -> bool:
        """Whether every reader's cursor of the old connection is closed, within a short wait:
        on an invalidated connection each of their statements fails at once."""
        deadline = time.monotonic() + READERS_WAIT_SECONDS
        while True:
            with self._cursors:
                if not self._readers:
                    return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)


class Snapshot:
    """A read transaction, begun on creation: `with snapshot as cur:` reads it, then ends it
    (and gives its cursor back to the store: `release`; `fatal` is told of an invalidated
    connection)."""

    def __init__(
        self,
        cur: Cursor,
        release: Callable[[Cursor], None],
        fatal: Callable[[BaseException], None],
    ) -> None:
        self._cur = cur
        self._release = release
        self._fatal = fatal
        try:
            cur.execute("BEGIN TRANSACTION")
            # DuckDB starts a transaction at its first read of the database: this one pins it
            cur.execute("SELECT count(*) FROM schema_version").fetchall()
        except BaseException as exc:
            self._end(exc)
            raise

    def __enter__(self) -> Cursor:
        return self._cur

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ended = exc
        try:
            if exc is None:
                self._cur.execute("COMMIT")
            else:
                with suppress(duckdb.Error):
                    self._cur.execute("ROLLBACK")
        except BaseException as failed:
            ended = failed
            raise
        finally:
            self._end(ended)

    def _end(self, exc: BaseException | None) -> None:
        if isinstance(exc, duckdb.FatalException):
            self._fatal(exc)
        self._release(self._cur)
