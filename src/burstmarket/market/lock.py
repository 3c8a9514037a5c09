"""The market's lock: exclusive sections for every state change but a VM declaration, and the
record of the tick in flight that declarations check themselves against (market/runner.py)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field


@dataclass(eq=False, slots=True)
class _InFlight:
    island: str
    done: Future[None] = field(default_factory=Future)
    declared: dict[str, int] = field(default_factory=dict)
    """max_gpus of each VM declaration committed while the tick cleared, last one wins."""


class MarketLock:
    """`with lock:` is an exclusive section: every state change but a VM declaration.

    Sections never overlap each other, nor a tick in flight (from its snapshot to its commit):
    so what a tick read stays true while it clears, except VM demand, which declarations keep
    changing; those check themselves against the tick (`tick_in_flight`). Reentrant, like the
    RLock it replaced (an operator's island change creates the island inside its section).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owner: int | None = None
        self._depth = 0
        self._tick: _InFlight | None = None

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner != me:
                self._cond.wait_for(lambda: self._owner is None and self._tick is None)
                self._owner = me
            self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._depth -= 1
            if not self._depth:
                self._owner = None
                self._cond.notify_all()

    def start_tick(self, island: str) -> None:
        """Inside a section: the tick of `island` is in flight once the section ends."""
        with self._cond:
            self._tick = _InFlight(island)

    def end_tick(self) -> None:
        with self._cond:
            if self._tick is None:
                return
            done = self._tick.done
            self._tick = None
            self._cond.notify_all()
        done.set_result(None)

    def tick_in_flight(self, island: str) -> Future[None] | None:
        """The future of `island`'s tick while it is in flight (done once it committed)."""
        tick = self._tick
        return tick.done if tick is not None and tick.island == island else None

    def declared(self, island: str, cluster: str, max_gpus: int) -> None:
        """A VM declaration committed (call holding the writer): recorded if `island`'s tick
        is in flight, for its late scale-downs (TickRunner._late_scale_downs, market/runner.py)."""
        tick = self._tick
        if tick is not None and tick.island == island:
            tick.declared[cluster] = max_gpus

    def declared_during_tick(self) -> dict[str, int]:
        tick = self._tick
        return {} if tick is None else tick.declared
