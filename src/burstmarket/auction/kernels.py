"""The auction's inner loops over node capacities, compiled by numba (no Python per capacity).

Every table here is int64 µUSD per hour indexed by a node capacity; every loop walks one table
once. The callers keep the logic; these only do the arithmetic, in place where they can.
Compiled on first use and cached beside this file, so only a process's first call pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

F = TypeVar("F", bound=Callable[..., Any])
Ints = npt.NDArray[np.int64]


def _compiled(function: F) -> F:
    """numba's njit, typed for mypy: the compiled function takes what the Python one does."""
    return cast(F, numba.njit(cache=True, nogil=True)(function))


@_compiled
def add_items(table: Ints, sizes: Ints, values: Ints) -> None:
    """0/1 knapsack: `table` may also use any subset of the items, each at most once.

    Capacities are walked downward so that `table[x - size]` is still the value before this
    item: the item is counted at most once.
    """
    top = len(table) - 1
    for k in range(len(sizes)):
        size, value = sizes[k], values[k]
        for x in range(top, size - 1, -1):
            candidate = table[x - size] + value
            if candidate > table[x]:
                table[x] = candidate


@_compiled
def add_unit_with_bits(table: Ints, size: int, value: int, bits: npt.NDArray[np.uint8]) -> None:
    """Add one unit to `table` and record, per capacity x, whether an optimum over it and the
    units already in the table holds it: value + table[x − size] ≥ table[x] (ties: hold it).
    `bits` is that verdict packed eight capacities to a byte, lowest bit first."""
    bits[:] = 0
    for x in range(len(table) - 1, size - 1, -1):
        candidate = table[x - size] + value
        if candidate >= table[x]:
            bits[x >> 3] |= np.uint8(1 << (x & 7))
            table[x] = candidate


@_compiled
def walk_bits(
    bits: npt.NDArray[np.uint8], sizes: Ints, capacity: int, probes: Ints
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int8]]:
    """Decide the units oldest first from their bits (see `add_unit_with_bits`), at `capacity`
    and, alongside, at each probe capacity. A probe leaves the walk at the first unit on which
    its decision differs: 1 if the probe's optimum holds that unit (and the main one does not),
    0 if the other way round; a probe that never differs reads 1."""
    count = len(sizes)
    chosen = np.zeros(count, dtype=np.bool_)
    verdict = np.ones(len(probes), dtype=np.int8)
    left = probes.copy()
    open_ = np.ones(len(probes), dtype=np.bool_)
    room = capacity
    for i in range(count):
        size = sizes[i]
        take = room >= size and (bits[i, room >> 3] >> (room & 7)) & 1 == 1
        chosen[i] = take
        for k in range(len(probes)):
            if not open_[k]:
                continue
            at = left[k]
            probe_take = at >= size and (bits[i, at >> 3] >> (at & 7)) & 1 == 1
            if probe_take != take:
                verdict[k] = 1 if probe_take else 0
                open_[k] = False
            elif take:
                left[k] = at - size
        if take:
            room -= size
    return chosen, verdict


@_compiled
def add_winner(
    table: Ints,
    keep: int,
    sizes: Ints,
    values: Ints,
    scratch: Ints,
    used: Ints,
    choice: npt.NDArray[Any],
) -> None:
    """One winner's step of the core's separation table, in place.

    The winner either stays out of the coalition and keeps `keep` (its bid less its payment),
    or takes part with any subset of its own units (`sizes`, `values`). `choice[x]` records, per
    capacity, the nodes it then uses: 0 when it stays out (out wins ties: it never pays for
    taking part with nothing).
    """
    length = len(table)
    for x in range(length):
        scratch[x] = table[x]
        used[x] = 0
    for k in range(len(sizes)):
        size, value = sizes[k], values[k]
        for x in range(length - 1, size - 1, -1):
            candidate = scratch[x - size] + value
            if candidate > scratch[x]:
                scratch[x] = candidate
                used[x] = used[x - size] + size
    for x in range(length):
        out = table[x] + keep
        if out >= scratch[x]:
            table[x] = out
            choice[x] = 0
        else:
            table[x] = scratch[x]
            choice[x] = used[x]


@_compiled
def best_split(left: Ints, right: Ints, capacity: int) -> tuple[int, int]:
    """max over a + b = capacity of left[a] + right[b], and the first a attaining it."""
    best, at = left[0] + right[capacity], 0
    for a in range(1, capacity + 1):
        value = left[a] + right[capacity - a]
        if value > best:
            best, at = value, a
    return best, at
