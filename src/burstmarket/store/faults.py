"""Faults of the store itself (a full disk, an I/O error), told apart from bugs.

A request that meets one is answered `store-unavailable` (503, Retry-After) with one REFUSED
line and no traceback: nothing of it was written, and the same request succeeds once the disk
has room again. DuckDB reports them as `IOException`, or, when the write-ahead log cannot be
written at COMMIT, as a `TransactionException` "Failed to commit: Could not write file ...", or,
once a checkpoint failed and invalidated the connection until the store reopens it
(store/database.py), as a `FatalException`; everything else stays a bug.
"""

from __future__ import annotations

import duckdb

from burstmarket.errors import StoreUnavailable

COMMIT_WRITE_FAILED = "Failed to commit: Could not write file"


def store_fault(exc: BaseException) -> StoreUnavailable | None:
    """The refusal to answer for `exc`, if it is a fault of the store rather than a bug."""
    if isinstance(exc, StoreUnavailable):
        return exc
    commit_failed = isinstance(exc, duckdb.TransactionException) and COMMIT_WRITE_FAILED in str(exc)
    if isinstance(exc, duckdb.IOException | duckdb.FatalException) or commit_failed:
        return StoreUnavailable(first_line(exc))
    return None


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's can run over several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
