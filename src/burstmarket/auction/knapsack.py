"""0/1 knapsack tables over whole nodes, the one primitive the whole auction is built from.

A table `t` has one entry per capacity: `t[x]` is the best value using at most `x` nodes. A single
pass over the items gives the optimum for every capacity at once, which is what lets the ladder,
VCG and the protected-node prices all read off the same few tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from math import isqrt

import numpy as np
import numpy.typing as npt

from burstmarket.auction.kernels import add_items

Table = npt.NDArray[np.int64]
Item = tuple[int, int]  # (nodes, value)


def empty(length: int) -> Table:
    return np.zeros(length, dtype=np.int64)


def add_group(table: Table, items: Sequence[Item]) -> Table:
    """A new table that may also use any subset of `items` (each at most once)."""
    out = table.copy()
    sizes, values = bundles(items)
    add_items(out, sizes, values)
    return out


def bundles(items: Sequence[Item]) -> tuple[Table, Table]:
    """`items` as 0/1 knapsack items (sizes, values), equal items bundled.

    Equal items are common (a VM declaration is many 1-node units at one price), and m copies of
    an item are exactly the 0/1 items of 1, 2, 4, … copies summing to m: log m items, not m.
    """
    counted = Counter(items).items() if len(items) > 1 else [(item, 1) for item in items]
    sizes: list[int] = []
    values: list[int] = []
    for (size, value), count in counted:
        for copies in _binary_parts(count):
            sizes.append(size * copies)
            values.append(value * copies)
    return np.array(sizes, dtype=np.int64), np.array(values, dtype=np.int64)


def _binary_parts(count: int) -> Iterator[int]:
    part = 1
    while count > 0:
        take = min(part, count)
        yield take
        count -= take
        part *= 2


def combine_at(left: Table, right: Table, capacity: int) -> int:
    """max over a + b = capacity of left[a] + right[b]: two disjoint item sets sharing nodes."""
    a = left[: capacity + 1]
    b = right[capacity::-1]
    return int((a + b).max())


def suffix_tables(
    groups: Sequence[Sequence[Item]], length: int, budget: int = 256 << 20
) -> tuple[Table, Callable[[], Iterator[Table]]]:
    """The table over all groups, and `walk()`: an iterator giving, for i = 0, 1, …, the table
    over groups[i+1:] (what is left after group i). `walk` may be called more than once.

    Storing every suffix table costs len(groups)·length integers: fine at 5,000 units on 2,000
    nodes, too much at 20,000 units on 10,000. Past `budget` bytes, checkpoints every √n groups
    and recomputing one block at a time keep memory at O(√n·length), for one more pass over the
    items per walk.
    """
    n = len(groups)
    block = 1 if n * length * 8 <= budget else max(1, isqrt(n))
    checkpoints: dict[int, Table] = {}
    table = empty(length)
    for i in range(n, -1, -1):
        if i % block == 0 or i == n:
            checkpoints[i] = table
        if i > 0:
            table = add_group(table, groups[i - 1])

    def walk() -> Iterator[Table]:
        for start in range(0, n, block):
            end = min(start + block, n)
            tables = [checkpoints[end]]
            for i in range(end - 1, start, -1):
                tables.append(add_group(tables[-1], groups[i]))
            yield from reversed(tables)

    return checkpoints[0], walk
