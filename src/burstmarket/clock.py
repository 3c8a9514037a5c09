"""Market time as integer nanoseconds since the epoch (UTC), injected so tests can drive it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

from burstmarket.errors import Invalid

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000
NS_PER_HOUR = 3600 * NS_PER_S


class Clock(Protocol):
    manual: bool

    def now_ns(self) -> int: ...

    def ticked(self, ns: int) -> None:
        """A tick at market time `ns` committed (called holding the store's writer)."""


class SystemClock:
    """The wall clock, in whole milliseconds like every market time (billing splits periods at
    millisecond boundaries); ticks come from the scheduler."""

    manual = False

    def now_ns(self) -> int:
        now = time.time_ns()
        return now - now % NS_PER_MS

    def ticked(self, ns: int) -> None:
        """Nothing: the wall clock moves by itself."""


class ManualClock:
    """Market time that moves only with a committed tick, so windows and holds lapse
    deterministically in tests: `POST /api/admin/ticks` runs each tick one interval after market
    time, and market time reaches it once it commits (`ticked`). A tick refused (a full disk)
    leaves it where it was, and a write between two ticks is stamped with the time of the last
    one (docs/market.md "Time")."""

    manual = True

    def __init__(self, start_ns: int) -> None:
        self._now = start_ns
        self._lock = threading.Lock()

    def now_ns(self) -> int:
        with self._lock:
            return self._now

    def ticked(self, ns: int) -> None:
        with self._lock:
            self._now = max(self._now, ns)

    def advance(self, ns: int) -> int:
        """Move market time on by `ns` without a tick (in-process tests: a write at a moment
        between two ticks)."""
        with self._lock:
            self._now += ns
            return self._now

    def resume(self, ns: int) -> None:
        """Carry on from market time `ns` (a restart on a store that holds market time)."""
        with self._lock:
            self._now = ns


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(ns: int) -> datetime:
    """Aware UTC datetime (µs precision: market times are whole milliseconds)."""
    return EPOCH + timedelta(microseconds=ns // 1000)


def maybe_datetime(ns: int | None) -> datetime | None:
    """`to_datetime`, None kept (a time that has not come: no window, not yet provisioned)."""
    return None if ns is None else to_datetime(ns)


def from_datetime(value: datetime) -> int:
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * NS_PER_S + delta.microseconds * 1000


def rfc3339(ns: int | None) -> str | None:
    if ns is None:
        return None
    return to_datetime(ns).isoformat().replace("+00:00", "Z")


EARLIEST = EPOCH
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
"""Times a client may name: market times are int64 nanoseconds (they end in 2262), and a range
reaching year 1 would overflow the arithmetic of a bucket or a window."""


def parse_time(field: str, raw: str) -> datetime:
    """An RFC 3339 time from a client, aware UTC (no offset means UTC), within EARLIEST..LATEST;
    Invalid naming the field otherwise."""
    try:
        value = datetime.fromisoformat(raw)
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except (ValueError, OverflowError):
        raise Invalid(field, "must be an RFC 3339 time", value=raw) from None
    if not EARLIEST <= value < LATEST:
        raise Invalid(
            field,
            f"must be from {EARLIEST:%Y-%m-%d} to before {LATEST:%Y-%m-%d}",
            value=raw,
            earliest=EARLIEST.isoformat(),
            latest=LATEST.isoformat(),
        )
    return value
