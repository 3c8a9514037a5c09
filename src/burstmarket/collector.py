"""Python's cycle collector held off while a tick runs (`Market.tick`) and while the engine
clears an island (`auction.clear`).

A tick makes and drops objects by the hundred thousand on a large island (its input's rows, the
auction's units, every row it writes), nearly all freed by their reference counts. Each 700
allocations the collector would scan the young ones, and its older generations again and again
the tick's own live state: at 10,000 nodes that was 700 ms of a 2.4 s tick (bench/bench_tick.py),
finding nothing. Held off, it runs once the tick is over, over what the tick left alive. A
clearing alone is the same on a smaller scale: on the Kubernetes-heavy 25,000-node island the
collector took 114 of its 1,288 ms, scanning the island's 100,000 units (bench/bench_clear.py).

Pauses may overlap (ticks of several islands, each in its own worker thread; a tick's clearing
inside its tick): the collector comes back when the last of them ends, and only if it was on
when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pauses:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.was_enabled = False


_pauses = _Pauses()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection while the block runs (reference counting frees as always)."""
    with _pauses.lock:
        if _pauses.running == 0:
            _pauses.was_enabled = gc.isenabled()
            gc.disable()
        _pauses.running += 1
    try:
        yield
    finally:
        with _pauses.lock:
            _pauses.running -= 1
            if _pauses.running == 0 and _pauses.was_enabled:
                gc.enable()
