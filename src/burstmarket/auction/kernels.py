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


NEG = -(1 << 62)
"""Minus infinity in a table: far below any value, and far enough above the int64 minimum that
adding a value to it never wraps."""


@_compiled
def advance(
    previous: Ints,
    previous_low: int,
    low: int,
    high: int,
    keep: int,
    sizes: Ints,
    values: Ints,
    out: Ints,
    choice: npt.NDArray[Any],
    buffer: Ints,
    used: Ints,
) -> None:
    """One winner's step of the core's separation table, over a band of capacities.

    `previous[x - previous_low]` is the best value on at most x nodes before this winner, for x in
    its band [previous_low, previous_low + len(previous) - 1]: none below it, and above it the
    value at its top (a plan on fewer nodes fits in more). The winner either stays out of the
    coalition and keeps `keep` (its bid less its payment), or takes part with any subset of its
    own units (`sizes`, `values`). Writes `out[x - low]` for x in [low, high] (low >= previous_low)
    and `choice[x - low]`, the nodes the winner then uses: 0 when it stays out (out wins ties: it
    never pays for taking part with nothing).
    """
    top = previous_low + len(previous) - 1
    length = high - previous_low + 1  # the buffer covers [previous_low, high]
    for x in range(length):
        buffer[x] = previous[min(x, top - previous_low)]
        used[x] = 0
    for k in range(len(sizes)):
        size, value = sizes[k], values[k]
        for x in range(length - 1, size - 1, -1):
            candidate = buffer[x - size] + value
            if candidate > buffer[x]:
                buffer[x] = candidate
                used[x] = used[x - size] + size
    for x in range(low, high + 1):
        stay_out = previous[min(x, top) - previous_low] + keep
        take_part = buffer[x - previous_low]
        if stay_out >= take_part:
            out[x - low] = stay_out
            choice[x - low] = 0
        else:
            out[x - low] = take_part
            choice[x - low] = used[x - previous_low]


@_compiled
def stay_or_join(
    losers: Ints, joined: Ints, took: Ints, keep: int, low: int, high: int, out: Ints,
    choice: npt.NDArray[Any],
) -> None:
    """The first winner's step: it stays out beside the losers (`losers[x] + keep`) or takes
    part (`joined[x]`, its best plan beside the losers, on `took[x]` of its own nodes). Those two
    tables do not depend on the payments, so they are built once per clearing (`advance` with a
    keep that never wins); the first winner is the one with the most units."""
    for x in range(low, high + 1):
        stay_out = losers[x] + keep
        if stay_out >= joined[x]:
            out[x - low] = stay_out
            choice[x - low] = 0
        else:
            out[x - low] = joined[x]
            choice[x - low] = took[x]


@_compiled
def separate(
    losers: Ints,
    joined: Ints,
    took: Ints,
    keeps: Ints,
    won: Ints,
    starts: Ints,
    sizes: Ints,
    values: Ints,
    classes: Ints,
    width: int,
    best: int,
) -> tuple[Ints, Ints, npt.NDArray[np.int8]]:
    """For every winner j, the most blocking coalition that leaves j out, among the coalitions
    whose plan stays within `width` nodes of the winning allocation at every step.

    Winners go in order; before winner j the winning allocation holds U_j = won[:j].sum() nodes
    and after it V_j = won[j:].sum(). The forward tables (losers, then winners 0 … j−1) are kept to
    [U_j − width, U_j + free + width], the backward ones (winners j … n−1) to the same band around
    V_j, `free` being the nodes the winning allocation leaves unused: a coalition that frees or
    takes up at most `width` nodes fits. Winner 0 steps through `stay_or_join`.

    Returns, per winner, the coalition's value (keeps of the winners left out plus the value of
    the others' plan); then the winners whose coalitions are traced: in each of the `classes`
    (interchangeable winners, see core.py), the one whose coalition is the most blocking, if it
    blocks (value above `best`); and for each of those a row of roles: 1 left out, 0 taking part
    on exactly the nodes it won, 2 taking part on other nodes.
    """
    n = len(keeps)
    capacity = len(losers) - 1
    free = capacity - won.sum()
    before = np.zeros(n + 1, dtype=np.int64)
    after = np.zeros(n + 1, dtype=np.int64)
    for j in range(n):
        before[j + 1] = before[j] + won[j]
    for j in range(n - 1, -1, -1):
        after[j] = after[j + 1] + won[j]
    f_low = np.maximum(0, before - width)
    f_high = np.minimum(capacity, before + free + width)
    b_low = np.maximum(0, after - width)
    b_high = np.minimum(capacity, after + free + width)
    band = int(max((f_high - f_low).max(), (b_high - b_low).max())) + 1
    scratch = band + int(won.max()) + 1
    buffer = np.empty(scratch, dtype=np.int64)
    used = np.empty(scratch, dtype=np.int64)

    # backward tables: winners j … n−1 for j ≥ 1 (leaving winner 0 out needs winners 1 … n−1)
    backward = np.empty((n + 1, band), dtype=np.int64)
    backward[n, :] = 0
    back_choice = np.empty((n, band), dtype=np.int32)
    for j in range(n - 1, 0, -1):
        a, b = starts[j], starts[j + 1]
        advance(
            backward[j + 1, : b_high[j + 1] - b_low[j + 1] + 1], b_low[j + 1], b_low[j],
            b_high[j], keeps[j], sizes[a:b], values[a:b], backward[j], back_choice[j], buffer,
            used,
        )

    forward = losers[f_low[0] : f_high[0] + 1].copy()
    following = np.empty(band, dtype=np.int64)
    fore_choice = np.empty((n, band), dtype=np.int32)
    totals = np.empty(n, dtype=np.int64)
    splits = np.empty(n, dtype=np.int64)
    for j in range(n):
        # best plan leaving j out: losers and winners before j on x nodes, those after on the rest
        top, at = NEG, -1
        low, high = b_low[j + 1], b_high[j + 1]
        for x in range(f_low[j], f_high[j] + 1):
            rest = capacity - x
            if rest < low:
                break
            value = forward[x - f_low[j]] + backward[j + 1, min(rest, high) - low]
            if value > top:
                top, at = value, x
        totals[j] = top + keeps[j]
        splits[j] = at
        if j == 0:
            stay_or_join(losers, joined, took, keeps[0], f_low[1], f_high[1], following,
                         fore_choice[0])
        else:
            a, b = starts[j], starts[j + 1]
            advance(
                forward, f_low[j], f_low[j + 1], f_high[j + 1], keeps[j], sizes[a:b],
                values[a:b], following, fore_choice[j], buffer, used,
            )
        forward = following[: f_high[j + 1] - f_low[j + 1] + 1].copy()

    top_of = np.full(classes.max() + 1, -1)
    for j in range(n):
        c = classes[j]
        if totals[j] > best and (top_of[c] < 0 or totals[j] > totals[top_of[c]]):
            top_of[c] = j
    traced = np.sort(top_of[top_of >= 0])
    roles = np.zeros((len(traced), n), dtype=np.int8)
    for row in range(len(traced)):
        j = traced[row]
        roles[row, j] = 1
        x = splits[j]
        for i in range(j - 1, -1, -1):
            took_here = fore_choice[i, x - f_low[i + 1]]
            _role(roles[row], i, took_here, won[i])
            x = min(x - took_here, f_high[i])
        x = min(capacity - splits[j], b_high[j + 1])
        for i in range(j + 1, n):
            took_here = back_choice[i, x - b_low[i]]
            _role(roles[row], i, took_here, won[i])
            x = min(x - took_here, b_high[i + 1])
    return totals, traced, roles


@_compiled
def most_blocking(
    losers: Ints,
    joined: Ints,
    took: Ints,
    keeps: Ints,
    won: Ints,
    starts: Ints,
    sizes: Ints,
    values: Ints,
    choices: npt.NDArray[Any],
) -> tuple[int, npt.NDArray[np.int8]]:
    """The exact separation: the most blocking coalition's value over every capacity, and, when
    `choices` has a row per winner (n × (capacity + 1)), its roles as in `separate` (else the
    choices are not kept and the roles read 0).

    Before winner j only capacities from S − (nodes the winners j … n−1 could use) up matter: a
    plan on fewer nodes fits there too. Winners that could use the most nodes go first, so that
    bound bites soon.
    """
    n = len(keeps)
    capacity = len(losers) - 1
    reach = np.zeros(n + 1, dtype=np.int64)  # nodes winners j … n−1 could use, at most S
    for j in range(n - 1, -1, -1):
        reach[j] = min(capacity, reach[j + 1] + sizes[starts[j] : starts[j + 1]].sum())
    low = capacity - reach
    keep_choices = choices.shape[0] == n
    scratch = np.empty(capacity + 1, dtype=choices.dtype)
    table = np.empty(capacity - low[1] + 1, dtype=np.int64)
    stay_or_join(losers, joined, took, keeps[0], low[1], capacity, table,
                 choices[0] if keep_choices else scratch)
    following = np.empty_like(table)
    buffer = np.empty(capacity + 1, dtype=np.int64)
    used = np.empty(capacity + 1, dtype=np.int64)
    for j in range(1, n):
        a, b = starts[j], starts[j + 1]
        choice = choices[j] if keep_choices else scratch
        advance(table, low[j], low[j + 1], capacity, keeps[j], sizes[a:b], values[a:b],
                following, choice, buffer, used)
        table, following = following[: capacity - low[j + 1] + 1], table
    roles = np.zeros(n, dtype=np.int8)
    if keep_choices:
        x = capacity
        for i in range(n - 1, -1, -1):
            took_here = choices[i, x - low[i + 1]]
            _role(roles, i, took_here, won[i])
            x -= took_here
    return table[-1], roles


@_compiled
def _role(roles: npt.NDArray[np.int8], i: int, took: int, won: int) -> None:
    if took == 0:
        roles[i] = 1
    elif took != won:
        roles[i] = 2
