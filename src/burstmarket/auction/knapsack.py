"""0/1 knapsack tables over whole nodes, the one primitive the whole auction is built from.

A table `t` has one entry per capacity: `t[x]` is the best value using at most `x` nodes. A single
pass over the items gives the optimum for every capacity at once, which is what lets the ladder,
VCG and the protected-node prices all read off the same few tables. The passes themselves are
compiled (`kernels`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from burstmarket.auction import kernels

Table = npt.NDArray[np.int64]
Item = tuple[int, int]  # (nodes, value)


def empty(length: int) -> Table:
    return np.zeros(length, dtype=np.int64)


def add_group(table: Table, items: Sequence[Item]) -> Table:
    """A new table that may also use any subset of `items` (each at most once)."""
    out = table.copy()
    if items:
        ordered = np.array(sorted(items), dtype=np.int64)
        sizes, values, _ = kernels.bundle(
            np.zeros(len(ordered), dtype=np.int64), ordered[:, 0], ordered[:, 1], 1
        )
        kernels.add_items(out, sizes, values)
    return out
