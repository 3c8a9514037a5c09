"""The demand journal: every request that changed the market, written in the transaction that
made the change, so its order in the journal is the order the market took the changes in
(docs/history.md "demand").

Whoever serves a request says what to record before the work starts (`record`, a context
variable, so the worker thread the request runs in sees it too); the first transaction of that
request to commit writes it, once: `Database.write` for an exclusive section, the group-commit
writer for a job queued under it (the job's own context, taken when it is queued). A request
refused before it changed anything commits nothing, so it is never recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from burstmarket.store.rows import Cursor, run


@dataclass(slots=True)
class Entry:
    """One request that changes the market, as it is to be recorded."""

    now: Callable[[], int]
    """Market time in ns, read when the change commits."""
    method: str
    path: str
    body: str
    """The request's body as it was sent (JSON), or '' for none."""
    cluster: str | None
    """The cluster it acts for or names (the token's; a path's or body's for the operator)."""
    island: str | None = None
    """The island it names, if it names one; else the cluster's or block's is looked up."""
    block: str | None = None
    written: bool = False


class Unrecorded:
    """A group-commit job's answer that changed nothing and will be queued again (a VM
    declaration that waits for the tick in flight): its request is recorded when it runs."""

    __slots__ = ()


_current: ContextVar[Entry | None] = ContextVar("burstmarket_journal", default=None)


def record(entry: Entry | None) -> None:
    """What the request being served records once it changes the market (None: nothing)."""
    _current.set(entry)


def current() -> Entry | None:
    return _current.get()


def write(cur: Cursor, entry: Entry | None) -> Callable[[], None] | None:
    """Write `entry` in the transaction of `cur` unless it is written already; the function
    that marks it written once the transaction commits (None: nothing to mark)."""
    if entry is None or entry.written:
        return None
    run(
        cur,
        "insert_demand",
        time_ns=entry.now(),
        island=entry.island,
        cluster=entry.cluster,
        block=entry.block,
        method=entry.method,
        path=entry.path,
        body=entry.body,
    )

    def committed() -> None:
        entry.written = True

    return committed
