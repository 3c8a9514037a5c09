"""Winner determination with the age tie-break (docs/market.md step 6), and the ladder's tie
verdicts, in one pass.

Units are taken oldest first. Of all optimal allocations the market wants the one holding the
oldest unit on which any two differ, so deciding units greedily in age order is exact: unit i is
taken iff an optimum still exists that agrees with every older decision and holds i, that is iff
value_i + T_{i+1}[x − size_i] ≥ T_{i+1}[x] at the capacity x left, T_{i+1} being the table over
the younger units. One pass over the units, youngest first, builds T_0 and records that verdict
for every unit and every capacity as one bit; the walk then reads one bit per unit.

The ladder needs, for a capacity X < S, whether the preferred optimum at X holds an older unit
than the preferred optimum at S where the two first differ (then a newcomer priced exactly at the
break-even wins the tie). Those "probes" walk the same bits alongside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burstmarket.auction import kernels
from burstmarket.auction.knapsack import Table


@dataclass(frozen=True, slots=True)
class Decisions:
    chosen: npt.NDArray[np.bool_]
    """Per unit, in age order: held by the preferred optimum at the capacity walked."""
    probe_wins: dict[int, bool]
    """Per probe capacity: True when its preferred optimum is preferred at the first difference."""


@dataclass(frozen=True, slots=True)
class Optima:
    """The best value at every capacity over all units (`full`), and their take-bits."""

    full: Table
    sizes: npt.NDArray[np.int64]
    bits: npt.NDArray[np.uint8]
    always: npt.NDArray[np.int64]

    def decide(self, capacity: int, probes: Sequence[int]) -> Decisions:
        chosen, verdicts = kernels.walk_bits(
            self.bits.view("<u8"),  # little-endian words: capacity x at bit x & 63 of word x >> 6
            self.always,
            self.sizes,
            capacity,
            np.asarray(probes, dtype=np.int64),
        )
        return Decisions(
            chosen,
            dict(zip(probes, (bool(v) for v in verdicts.tolist()), strict=True)),
        )


def optima(sizes: npt.NDArray[np.int64], values: npt.NDArray[np.int64], supply: int) -> Optima:
    """Units in age order, oldest first. Memory: one bit per unit and capacity."""
    full, bits, always = kernels.optima(sizes, values, supply, ~dominated(sizes, values, supply))
    return Optima(full, sizes, bits, always)


def dominated(
    sizes: npt.NDArray[np.int64], values: npt.NDArray[np.int64], supply: int
) -> npt.NDArray[np.bool_]:
    """Units no optimum on at most `supply` nodes holds: those for which at least `supply`
    single-node units bid strictly more per node. A plan holding such a unit of k nodes uses
    at most supply − k of those, so k of them are left, and taking them instead is worth more.
    Leaving these units out changes no table entry up to `supply`, and no choice among optima.
    (Compiled: the receipts ask it of thousands of small knapsacks, where numpy's calls cost
    more than the test.)"""
    return kernels.dominated(sizes, values, supply)
