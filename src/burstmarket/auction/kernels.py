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


NEG = -(1 << 62)
"""Minus infinity in a table: far below any value, and far enough above the int64 minimum that
adding a value to it never wraps."""


@_compiled
def add_items(table: Ints, sizes: Ints, values: Ints) -> None:
    """0/1 knapsack: `table` may also use any subset of the items, each at most once.

    Of several items of one size a plan takes the most valuable ones first, so their values in
    decreasing order are a concave gain, t ↦ P(t), and the step is a max-plus convolution of each
    residue class x ≡ ρ (mod size) with P: `_concave_step`, O(L log L) for the whole size class
    instead of one pass per item. A size with few items goes item by item: capacities walked
    downward, so that `table[x − size]` is still the value before this item.
    """
    by_value = np.argsort(-values, kind="mergesort")
    order = by_value[np.argsort(sizes[by_value], kind="mergesort")]  # by size, then value down
    top = len(table) - 1
    i = 0
    scratch = np.empty(len(table), dtype=np.int64)
    while i < len(order):
        size = sizes[order[i]]
        end = i
        while end < len(order) and sizes[order[end]] == size:
            end += 1
        if size <= top:
            if end - i >= _CONCAVE_FROM:
                gains = np.zeros(end - i + 1, dtype=np.int64)
                for t in range(i, end):
                    gains[t - i + 1] = gains[t - i] + values[order[t]]
                _concave_step(table, size, gains, scratch)
            else:
                step = np.uint64(size)  # unsigned indices: see `optima`
                for k in range(i, end):
                    value = values[order[k]]
                    for j in range(top - size + 1):
                        x = np.uint64(top - j)
                        candidate = table[x - step] + value
                        if candidate > table[x]:
                            table[x] = candidate
        i = end


_CONCAVE_FROM = 8  # items of one size from which one concave step beats item-by-item passes


@_compiled
def _concave_step(table: Ints, size: int, gains: Ints, scratch: Ints) -> None:
    """table[x] ← max over t ≤ len(gains) − 1, t·size ≤ x of table[x − t·size] + gains[t], with
    `gains` concave. Per residue class f[k] = table[ρ + k·size], the best source k − t is
    non-decreasing in k (the Monge property of f[i] + gains[k − i]), so divide and conquer finds
    every row's best in O(K log K)."""
    most = len(gains) - 1
    length = len(table)
    stack = np.empty((64, 4), dtype=np.int64)
    for rho in range(min(size, length)):
        count = (length - 1 - rho) // size + 1
        source = scratch[:count]
        for k in range(count):
            source[k] = table[rho + k * size]
        stack[0] = (0, count - 1, 0, count - 1)  # rows lo_k … hi_k, sources lo_i … hi_i
        depth = 1
        while depth > 0:
            depth -= 1
            lo_k, hi_k, lo_i, hi_i = stack[depth]
            if lo_k > hi_k:
                continue
            k = (lo_k + hi_k) // 2
            best, at = NEG, lo_i
            for i in range(max(lo_i, k - most), min(hi_i, k) + 1):
                candidate = source[np.uint64(i)] + gains[np.uint64(k - i)]  # see `optima`
                if candidate >= best:
                    best, at = candidate, i
            table[rho + k * size] = best
            stack[depth] = (lo_k, k - 1, lo_i, at)
            stack[depth + 1] = (k + 1, hi_k, at, hi_i)
            depth += 2


@_compiled
def dominated(sizes: Ints, values: Ints, supply: int) -> npt.NDArray[np.bool_]:
    """allocation.dominated: at least `supply` single-node units bid more per node."""
    singles = values[sizes == 1]
    if len(singles) < supply:  # too few singles to dominate anything
        return np.zeros(len(sizes), dtype=np.bool_)
    singles.sort()
    per_node = values // np.maximum(sizes, 1)
    above = len(singles) - np.searchsorted(singles, per_node, side="right")
    return above >= supply


@_compiled
def optima(
    sizes: Ints, values: Ints, supply: int, bidding: npt.NDArray[np.bool_]
) -> tuple[Ints, npt.NDArray[np.uint8], Ints]:
    """The best value on at most x nodes over the `bidding` units (x = 0 … supply), and the
    take-bits of every unit.

    Units are added youngest first; adding unit i records, per capacity x, whether an optimum
    over it and the younger units holds it: value + table[x − size] ≥ table[x] (ties: hold it).
    `bits[i]` is that verdict packed eight capacities to a byte, lowest bit first, the row
    padded to whole 64-bit words (`walk_bits` reads it a word at a time). A unit left out, or
    larger than the supply, is never held: its bits stay 0.

    While the younger units fit together in fewer than `supply` nodes, the table is flat past
    their total (every one of them fits) and unit i is held on every capacity from that total
    plus its size up: `always[i]`, past which its bits are neither computed nor read.
    """
    table = np.zeros(supply + 1, dtype=np.int64)
    bits = np.zeros((len(sizes), (supply + 64) // 64 * 8), dtype=np.uint8)
    always = np.full(len(sizes), supply + 1, dtype=np.int64)
    top = 0  # table[x] for x > top is table[top]
    for i in range(len(sizes) - 1, -1, -1):
        size, value = sizes[i], values[i]
        if not bidding[i] or size > supply:
            continue
        reach = min(supply, top + size)
        table[top + 1 : reach + 1] = table[top]
        row = bits[i]
        # unsigned indices: numba checks a signed index for a negative one to wrap on every
        # access, and these three a cell are the whole pass (a fifth of its time, measured)
        step = np.uint64(size)
        for k in range(reach - size + 1):
            x = np.uint64(reach - k)
            candidate = table[x - step] + value
            if candidate >= table[x]:
                row[x >> np.uint64(3)] |= np.uint8(1) << np.uint8(x & np.uint64(7))
                table[x] = candidate
        always[i] = reach + 1
        top = reach
    table[top + 1 :] = table[top]
    return table, bits, always


@_compiled
def bundle(groups: Ints, sizes: Ints, values: Ints, count: int) -> tuple[Ints, Ints, Ints]:
    """Items of many groups as 0/1 knapsack items, equal items of a group bundled: the items
    sorted by (group, size, value), `count` groups. Returns the bundled sizes and values, group
    g's being [starts[g], starts[g + 1]).

    Equal items are common (a VM declaration is many 1-node units at one price), and m copies of
    an item are exactly the 0/1 items of 1, 2, 4, … copies summing to m: log m items, not m.
    """
    out_sizes = np.empty(len(sizes), dtype=np.int64)
    out_values = np.empty(len(sizes), dtype=np.int64)
    starts = np.zeros(count + 1, dtype=np.int64)
    made = 0
    i = 0
    while i < len(sizes):
        run = i
        while (
            run < len(sizes)
            and groups[run] == groups[i]
            and sizes[run] == sizes[i]
            and values[run] == values[i]
        ):
            run += 1
        left, part = run - i, 1
        while left > 0:
            take = min(part, left)
            out_sizes[made] = sizes[i] * take
            out_values[made] = values[i] * take
            made += 1
            left -= take
            part *= 2
        starts[groups[i] + 1] = made
        i = run
    for g in range(count):  # groups without items end where the previous one did
        starts[g + 1] = max(starts[g + 1], starts[g])
    return out_sizes[:made], out_values[:made], starts


@_compiled
def first_of_each_size(
    ranked: Ints,
    ends: Ints,
    sizes: Ints,
    cluster: Ints,
    kept: npt.NDArray[np.bool_],
    aside: Ints,
    room: int,
) -> Ints:
    """Of the units `ranked` (by size ascending, then as a plan would take those of one size;
    `ends[k]`: where the size of `ranked[k]` ends), the first room // size of every size up to
    `room` whose cluster is `kept` (by cluster code) and that are not `aside` (sorted): all a
    plan on `room` nodes can hold of that size, so a knapsack over them is one over them all."""
    out = np.empty(len(ranked), dtype=np.int64)
    made, k = 0, 0
    while k < len(ranked) and sizes[ranked[k]] <= room:
        left, end = room // max(sizes[ranked[k]], 1), ends[k]
        while k < end and left > 0:
            unit = ranked[k]
            if kept[cluster[unit]]:
                at = np.searchsorted(aside, unit)
                if at == len(aside) or aside[at] != unit:
                    out[made] = unit
                    made += 1
                    left -= 1
            k += 1
        k = end
    return out[:made]


@_compiled
def values_without(
    base: Ints, starts: Ints, sizes: Ints, values: Ints, at: Ints, block: int
) -> Ints:
    """V(X, without group c) at the capacities `at[c]` (a row per group; −1: no query, and every
    query at least `at[0, 0]`), over `base` (every item of the groups never removed) and the
    groups' items.

    Groups go in a row: the table without group c is the prefix before c (base included) beside
    the suffix after c, met at X alone. The suffix after c can use no more nodes than its groups
    demand, D_c, so it is kept to [0, D_c] and the prefix to [X − D_c, X]; groups demanding the
    most first keep both short. Suffix tables are kept every `block` groups and rebuilt one block
    at a time: memory for len/block + block tables, one more pass over the items.
    """
    n = len(starts) - 1
    length = len(base)
    least = at[0, 0] if n else 0
    reach = np.zeros(n + 1, dtype=np.int64)  # reach[c]: nodes groups c … n − 1 could use
    for c in range(n - 1, -1, -1):
        reach[c] = min(length - 1, reach[c + 1] + sizes[starts[c] : starts[c + 1]].sum())
    kept = np.zeros((n // block + 1, length), dtype=np.int64)  # suffix at c = 0, block, 2·block …
    table = np.zeros(length, dtype=np.int64)
    for c in range(n - 1, -1, -1):
        a, b = starts[c], starts[c + 1]
        table[reach[c + 1] + 1 : reach[c] + 1] = table[reach[c + 1]]  # more room, same plans
        add_items(table[: reach[c] + 1], sizes[a:b], values[a:b])
        if c % block == 0:
            kept[c // block, : reach[c] + 1] = table[: reach[c] + 1]
    result = np.full(at.shape, -1, dtype=np.int64)
    prefix = base.copy()
    suffixes = np.empty((block, length), dtype=np.int64)
    for first in range(0, n, block):
        last = min(first + block, n)
        # suffixes[c - first]: the table over groups c + 1 … n − 1, on [0, reach[c + 1]]
        table[: reach[last] + 1] = kept[last // block, : reach[last] + 1]
        for c in range(last - 1, first - 1, -1):
            suffixes[c - first, : reach[c + 1] + 1] = table[: reach[c + 1] + 1]
            if c > first:
                a, b = starts[c], starts[c + 1]
                table[reach[c + 1] + 1 : reach[c] + 1] = table[reach[c + 1]]
                add_items(table[: reach[c] + 1], sizes[a:b], values[a:b])
        for c in range(first, last):
            suffix = suffixes[c - first]
            most = reach[c + 1]
            for q in range(at.shape[1]):
                x = at[c, q]
                if x < 0:
                    continue
                top = NEG
                for a in range(max(0, x - most), x + 1):  # unsigned indices: see `optima`
                    top = max(top, prefix[np.uint64(a)] + suffix[np.uint64(x - a)])
                result[c, q] = top
            # the prefix is right from least − reach[c] up (all the combine above reads), and
            # adding group c (reach[c] − reach[c + 1] nodes) keeps it right from least −
            # reach[c + 1] up
            a, b = starts[c], starts[c + 1]
            add_items(prefix[max(0, least - reach[c]) :], sizes[a:b], values[a:b])
    return result


@_compiled
def walk_bits(
    bits: npt.NDArray[np.uint64], always: Ints, sizes: Ints, capacity: int, probes: Ints
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int8]]:
    """Decide the units oldest first from their bits (see `optima`; here each row read as
    64-bit words, capacity x at bit x & 63 of word x >> 6), at `capacity` and, alongside, at
    each probe capacity (at most `capacity`). A probe leaves the walk at the first unit on which
    its decision differs: 1 if the probe's optimum holds that unit (and the main one does not),
    0 if the other way round; a probe that never differs reads 1.

    Until it leaves, a probe takes what the main walk takes, so its room stays the main room
    less a fixed amount: the probes still walking are one bit mask over rooms, shifted down by
    a unit's size when the walk takes it, and a unit is decided for all of them a word at a
    time (one comparison of the unit's bits with its main decision) instead of once per probe.
    """
    count, words = len(sizes), bits.shape[1]
    chosen = np.zeros(count, dtype=np.bool_)
    walking = np.zeros(words, dtype=np.uint64)
    """Bit x: a probe still walking has room x now."""
    left_at = np.ones(words * 64, dtype=np.int8)
    """By a probe's capacity: the verdict it left with (1 while it walks)."""
    open_count = 0
    for at in probes:
        word, bit = at >> 6, np.uint64(1) << np.uint64(at & 63)
        if walking[word] & bit == 0:
            walking[word] |= bit
            open_count += 1
    room = capacity
    ones = ~np.uint64(0)
    for i in range(count):
        size, held_from = sizes[i], always[i]
        take = room >= size and (
            room >= held_from or (bits[i, room >> 6] >> np.uint64(room & 63)) & np.uint64(1) == 1
        )
        chosen[i] = take
        if open_count == 0:
            if take:
                room -= size
            continue
        taken = capacity - room
        for w in range(min(words, (room >> 6) + 1)):
            still = walking[w]
            if still == 0:
                continue
            # the probes' decisions: the unit's bits, and every room from `always` up holds it
            # (the rows are 0 below its size)
            low = w * 64
            if held_from <= low:
                holds = ones
            elif held_from >= low + 64:
                holds = bits[i, w]
            else:
                holds = bits[i, w] | (ones << np.uint64(held_from - low))
            differ = still & ~holds if take else still & holds
            while differ != 0:
                lowest = differ & (~differ + np.uint64(1))
                x = low + _bit_index(lowest)
                left_at[x + taken] = 0 if take else 1
                open_count -= 1
                differ ^= lowest
                still ^= lowest
            walking[w] = still
        if take:
            _shift_down(walking, size)
            room -= size
    verdict = np.empty(len(probes), dtype=np.int8)
    for k in range(len(probes)):
        verdict[k] = left_at[probes[k]]
    return chosen, verdict


@_compiled
def preferred(sizes: Ints, values: Ints, capacity: int) -> npt.NDArray[np.bool_]:
    """The preferred optimum (age tie-break) of units in age order on `capacity` nodes, as a
    mask: allocation.optima(…).decide(capacity) in one call (the receipts make thousands of
    these small knapsacks, where the calls between Python and here cost more than the cells)."""
    bidding = ~dominated(sizes, values, capacity)
    _, bits, always = optima(sizes, values, capacity, bidding)
    return _walk(bits, always, sizes, capacity)


@_compiled
def band(
    enter: Ints, give: Ints, sizes: Ints, values: Ints, room: int, most: int
) -> tuple[Ints, Ints]:
    """receipts.Tracer._banded's two knapsacks in one call: of the candidates `enter` (in age
    order) on `room` nodes plus the d given back, and of `give` (the least valuable first)
    giving exactly d ≤ `most` nodes at the least value, the best net plan, the fewest nodes
    given way among the best: the units brought in, and those given way."""
    reach = room + most
    in_sizes, in_values = sizes[enter], values[enter]
    gains, in_bits, in_always = optima(
        in_sizes, in_values, reach, ~dominated(in_sizes, in_values, reach)
    )
    # giving way as a knapsack that prefers nodes first: each node is worth `heavy`, more than
    # all the candidates' values together, so the best on d nodes fills exactly d if it can
    out_sizes = sizes[give]
    heavy = values[give].sum() + 1
    out_values = heavy * out_sizes - values[give]
    costs, out_bits, out_always = optima(
        out_sizes, out_values, most, ~dominated(out_sizes, out_values, most)
    )
    best, top = 0, NEG
    for d in range(most + 1):
        if costs[d] > heavy * (d - 1):  # some candidates add up to exactly d nodes
            net = gains[room + d] - (heavy * d - costs[d])
            if net > top:
                best, top = d, net
    taken = _walk(in_bits, in_always, in_sizes, room + best)
    given = _walk(out_bits, out_always, out_sizes, best)
    return enter[taken], give[given]


@_compiled
def _walk(
    bits: npt.NDArray[np.uint8], always: Ints, sizes: Ints, capacity: int
) -> npt.NDArray[np.bool_]:
    """The preferred optimum at `capacity` from `optima`'s bits (no probes)."""
    chosen, _ = walk_bits(bits.view(np.uint64), always, sizes, capacity, np.empty(0, np.int64))
    return chosen


@_compiled
def _bit_index(single: np.uint64) -> int:
    """The position of the one set bit of `single`."""
    at = 0
    while single > np.uint64(1):
        single >>= np.uint64(1)
        at += 1
    return at


@_compiled
def _shift_down(mask: npt.NDArray[np.uint64], by: int) -> None:
    """Every set bit of the multi-word `mask` moves `by` places down (bits below 0 drop)."""
    step, rest = by >> 6, np.uint64(by & 63)
    words = len(mask)
    for w in range(words):
        source = w + step
        if source >= words:
            mask[w] = 0
            continue
        moved = mask[source] >> rest
        if rest != 0 and source + 1 < words:
            moved |= mask[source + 1] << (np.uint64(64) - rest)
        mask[w] = moved


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
    known = len(previous)
    length = high - previous_low + 1  # the buffer covers [previous_low, high]
    fill = min(known, length)
    buffer[:fill] = previous[:fill]
    buffer[fill:length] = previous[known - 1]
    used[:length] = 0
    for k in range(len(sizes)):
        size, value = sizes[k], values[k]
        for x in range(length - 1, size - 1, -1):
            candidate = buffer[x - size] + value
            if candidate > buffer[x]:
                buffer[x] = candidate
                used[x] = used[x - size] + size
    shift = low - previous_low
    for x in range(high - low + 1):
        stay_out = previous[min(x + shift, known - 1)] + keep
        take_part = buffer[x + shift]
        if stay_out >= take_part:
            out[x] = stay_out
            choice[x] = 0
        else:
            out[x] = take_part
            choice[x] = used[x + shift]


@_compiled
def stay_or_join(
    losers: Ints,
    joined: Ints,
    took: Ints,
    keep: int,
    low: int,
    high: int,
    out: Ints,
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
            backward[j + 1, : b_high[j + 1] - b_low[j + 1] + 1],
            b_low[j + 1],
            b_low[j],
            b_high[j],
            keeps[j],
            sizes[a:b],
            values[a:b],
            backward[j],
            back_choice[j],
            buffer,
            used,
        )

    tables = np.empty((2, band), dtype=np.int64)  # the forward table and the next, in turn
    forward = tables[0, : f_high[0] - f_low[0] + 1]
    forward[:] = losers[f_low[0] : f_high[0] + 1]
    fore_choice = np.empty((n, band), dtype=np.int32)
    totals = np.empty(n, dtype=np.int64)
    splits = np.empty(n, dtype=np.int64)
    for j in range(n):
        # best plan leaving j out: losers and winners before j on x nodes, those after on the rest
        top, at = NEG, -1
        low, high = b_low[j + 1], b_high[j + 1]
        after_j = backward[j + 1]
        start = f_low[j]
        for x in range(start, min(f_high[j], capacity - low) + 1):
            value = forward[x - start] + after_j[min(capacity - x, high) - low]
            if value > top:
                top = value
                at = x
        totals[j] = top + keeps[j]
        splits[j] = at
        following = tables[(j + 1) % 2]
        if j == 0:
            stay_or_join(
                losers, joined, took, keeps[0], f_low[1], f_high[1], following, fore_choice[0]
            )
        else:
            a, b = starts[j], starts[j + 1]
            advance(
                forward,
                f_low[j],
                f_low[j + 1],
                f_high[j + 1],
                keeps[j],
                sizes[a:b],
                values[a:b],
                following,
                fore_choice[j],
                buffer,
                used,
            )
        forward = following[: f_high[j + 1] - f_low[j + 1] + 1]

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
    count: int,
) -> tuple[Ints, npt.NDArray[np.int8]]:
    """The exact separation: the most blocking coalition's value over every capacity (the last
    entry of the table returned), and, when `choices` has a row per winner (n × (capacity +
    1)), its roles as in `separate` (else the choices are not kept and the roles read 0).
    With `count` < n, the front half only: the table after the first `count` winners, over the
    capacities from S − (nodes the others could use) to S (see `blocking_back`).

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
    stay_or_join(
        losers,
        joined,
        took,
        keeps[0],
        low[1],
        capacity,
        table,
        choices[0] if keep_choices else scratch,
    )
    following = np.empty_like(table)
    buffer = np.empty(capacity + 1, dtype=np.int64)
    used = np.empty(capacity + 1, dtype=np.int64)
    for j in range(1, count):
        a, b = starts[j], starts[j + 1]
        choice = choices[j] if keep_choices else scratch
        advance(
            table,
            low[j],
            low[j + 1],
            capacity,
            keeps[j],
            sizes[a:b],
            values[a:b],
            following,
            choice,
            buffer,
            used,
        )
        table, following = following[: capacity - low[j + 1] + 1], table
    roles = np.zeros(n, dtype=np.int8)
    if keep_choices:
        x = capacity
        for i in range(n - 1, -1, -1):
            took_here = choices[i, x - low[i + 1]]
            _role(roles, i, took_here, won[i])
            x -= took_here
    return table, roles


@_compiled
def blocking_back(
    keeps: Ints, starts: Ints, sizes: Ints, values: Ints, first: int, capacity: int
) -> Ints:
    """The exact separation's back half, the value alone: the best the winners `first` … n−1
    (`most_blocking`'s order) are worth on at most y nodes, each staying out (keeping `keeps[j]`)
    or taking part with its own units, for y = 0 … the nodes they could use (at most
    `capacity`). `most_blocking` of the winners before `first` (its front half) is a table over
    the capacities S − that many … S, so the most blocking coalition's value is the best of
    front[i] + back[len − 1 − i]: the two halves run on two threads."""
    n = len(keeps)
    reach = 0
    for j in range(first, n):
        reach = min(capacity, reach + sizes[starts[j] : starts[j + 1]].sum())
    tables = (np.empty(reach + 1, dtype=np.int64), np.empty(reach + 1, dtype=np.int64))
    buffer = np.empty(reach + 1, dtype=np.int64)
    used = np.empty(reach + 1, dtype=np.int64)
    choice = np.empty(reach + 1, dtype=np.int64)
    table = np.zeros(1, dtype=np.int64)  # no winner yet: 0 on any number of nodes
    high, k = 0, 0
    for j in range(n - 1, first - 1, -1):
        a, b = starts[j], starts[j + 1]
        high = min(capacity, high + sizes[a:b].sum())
        out = tables[k][: high + 1]
        advance(table, 0, 0, high, keeps[j], sizes[a:b], values[a:b], out, choice, buffer, used)
        table, k = out, 1 - k
    return table


@_compiled
def _role(roles: npt.NDArray[np.int8], i: int, took: int, won: int) -> None:
    if took == 0:
        roles[i] = 1
    elif took != won:
        roles[i] = 2


@_compiled
def growth_steps(best: Ints, held: int, rungs: int, step: int, gang: bool) -> Ints:
    """Grid steps over the reserve for a cluster to hold `held` + n nodes, n = 1 … `rungs`
    (growth.py): `best[m]` is the others' best value on S − m nodes, `step` one grid step's
    value per node. −1 where `best` is too short (more nodes than there are)."""
    out = np.full(rungs, -1, dtype=np.int64)
    for n in range(1, rungs + 1):
        total = n if gang else held + n
        if total >= len(best):
            break
        floor = best[total]
        steps = 0
        for m in range(0, 1 if gang else total):
            count = n if gang else total - m
            steps = max(steps, (best[m] - floor) // (count * step) + 1)
        out[n - 1] = steps
    return out


@_compiled
def growth_steps_rows(
    best: Ints, lengths: Ints, held: Ints, rungs: int, step: int, gang: npt.NDArray[np.bool_]
) -> Ints:
    """`growth_steps` for many clusters in one call (a tick prices every cluster's own ladder):
    row k from the first `lengths[k]` entries of `best[k]`, with `held[k]` and `gang[k]`."""
    out = np.empty((best.shape[0], rungs), dtype=np.int64)
    for k in range(best.shape[0]):
        out[k] = growth_steps(best[k, : lengths[k]], held[k], rungs, step, gang[k])
    return out
