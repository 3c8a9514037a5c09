"""Group commit: one writer thread runs queued jobs many to a transaction (datasette's shape).

A DuckDB commit costs about as much as a dozen small statements, and every write must hold the
one writer anyway; so under load the writer takes every job waiting in the queue, runs them one
after the other in a single transaction and commits once. Each job's caller waits on a future
that resolves only after that commit: an answer is never sent for a change that is not durable.

A job is a function of a `Batch` (the writer's cursor, plus hooks around the commit). It decides
first and writes after: a job that refuses (raises MarketError) has written nothing, so its
refusal is its answer and the batch goes on. Any other exception means the transaction may hold
half a job: the batch is rolled back and each of its jobs is run again alone, so one bad job never
fails the others. An after-commit hook that fails leaves the batch committed but its bookkeeping
half done: the batch's rollback hooks run (caches forget what they kept), its callers get the
error, and the writer goes on with the next batch. Nothing a job or hook raises stops the writer.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from burstmarket import metrics
from burstmarket.errors import MarketError
from burstmarket.store import journal
from burstmarket.store.faults import store_fault
from burstmarket.store.rows import Cursor

log = logging.getLogger(__name__)

T = TypeVar("T")
Hook = Callable[[], None]

MAX_BATCH = 512
"""Jobs per transaction at most (bounds how long one commit keeps its first caller waiting)."""


class Transactions(Protocol):
    """What the writer needs of the store (store/database.py's Database)."""

    def held(self) -> AbstractContextManager[None]: ...
    def write(self) -> AbstractContextManager[Cursor]: ...


@dataclass(eq=False, slots=True)
class Batch:
    """One group-commit transaction as its jobs see it."""

    cur: Cursor
    _before: dict[Callable[[Cursor], None], None] = field(default_factory=dict)
    _after: dict[Hook, None] = field(default_factory=dict)
    _failed: dict[Hook, None] = field(default_factory=dict)

    def before_commit(self, hook: Callable[[Cursor], None]) -> None:
        """Run `hook(cur)` once, after the last job and before COMMIT (to write rows that the
        batch's jobs gathered, in one statement per table)."""
        self._before.setdefault(hook)

    def after_commit(self, hook: Hook) -> None:
        """Run `hook()` once after COMMIT, still holding the writer."""
        self._after.setdefault(hook)

    def on_rollback(self, hook: Hook) -> None:
        """Run `hook()` once if the batch is rolled back (to forget what it changed in memory)."""
        self._failed.setdefault(hook)


@dataclass(eq=False, slots=True)
class _Job:
    run: Callable[[Batch], Any]
    entry: journal.Entry | None
    """The request it serves, recorded with its change (store/journal.py)."""
    future: Future[Any] = field(default_factory=Future)


class GroupWriter:
    def __init__(self, db: Transactions) -> None:
        self._db = db
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self._stopped = False

    def submit(self, job: Callable[[Batch], T]) -> Future[T]:
        if self._stopped:
            raise RuntimeError("the store is closed")
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._loop, name="store-writer", daemon=True
                    )
                    self._thread.start()
        queued = _Job(job, journal.current())
        self._queue.put(queued)
        return queued.future

    def queued(self) -> int:
        """Jobs waiting for the writer."""
        return self._queue.qsize()

    def stop(self) -> None:
        """Finish what is queued, then stop the thread."""
        self._stopped = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            jobs = [first]
            stop = False
            while len(jobs) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                jobs.append(more)
            try:
                if not self._commit(jobs, alone=len(jobs) == 1):
                    for job in jobs:
                        self._commit([job], alone=True)
            except Exception as exc:  # a bug here must not leave every later caller waiting
                log.exception("the store writer failed on a batch of %d jobs", len(jobs))
                _fail(jobs, exc)
            if stop:
                return

    def _commit(self, jobs: list[_Job], alone: bool) -> bool:
        """Run `jobs` in one transaction; False if it failed and they must run again alone."""
        outcomes: list[tuple[bool, Any]] = []
        with self._db.held():
            batch: Batch | None = None
            recorded: list[Callable[[], None]] = []
            try:
                with metrics.WRITER_COMMIT_SECONDS.time(), self._db.write() as cur:
                    batch = Batch(cur)
                    for job in jobs:
                        try:
                            outcomes.append((True, answer := job.run(batch)))
                        except MarketError as refusal:
                            outcomes.append((False, refusal))
                            continue
                        if not isinstance(answer, journal.Unrecorded):
                            # in the jobs' order: the order their changes take (their seq)
                            mark = journal.write(cur, job.entry)
                            if mark is not None:
                                recorded.append(mark)
                    for before in batch._before:
                        before(cur)
            except Exception as exc:
                if batch is not None:
                    for hook in batch._failed:
                        hook()
                if (fault := store_fault(exc)) is not None:
                    # the disk, not a job: every job is answered 503, logged where it is answered
                    for job in jobs:
                        job.future.set_exception(fault)
                    return True
                if not alone:
                    log.warning(
                        "group commit of %d jobs failed (%r); running them one by one",
                        len(jobs),
                        exc,
                    )
                    return False
                log.exception("a store job failed; nothing of it was committed")
                jobs[0].future.set_exception(exc)
                return True
            assert batch is not None
            for mark in recorded:
                mark()
            # committed: the jobs' in-memory bookkeeping, before any other write runs
            try:
                for after in batch._after:
                    after()
            except Exception as exc:
                log.exception("an after-commit hook failed; its batch is committed")
                for hook in batch._failed:
                    hook()
                _fail(jobs, exc)
                return True
        for job, (ok, value) in zip(jobs, outcomes, strict=True):
            if ok:
                job.future.set_result(value)
            else:
                job.future.set_exception(value)
        return True


def _fail(jobs: list[_Job], exc: BaseException) -> None:
    for job in jobs:
        if not job.future.done():
            job.future.set_exception(exc)
