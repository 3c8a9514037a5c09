"""Winner determination with the age tie-break (docs/market.md step 6), and the ladder's tie
verdicts, in one pass.

Units are taken oldest first. Of all optimal allocations the market wants the one holding the
oldest unit on which any two differ, so deciding units greedily in age order is exact: unit i is
taken iff an optimum still exists that agrees with every older decision and holds i. With the
table over the younger units (knapsack.suffix_tables) that test is two lookups.

The ladder needs, for a capacity X < S, whether the preferred optimum at X holds an older unit
than the preferred optimum at S where the two first differ (then a newcomer priced exactly at the
break-even wins the tie). Those "probes" ride along in the same pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from burstmarket.auction.knapsack import Item, Table


@dataclass(frozen=True, slots=True)
class Decisions:
    chosen: list[bool]
    """Per unit, in age order: held by the preferred optimum at the full supply."""
    probe_wins: dict[int, bool]
    """Per probe capacity: True when its preferred optimum is preferred at the first difference."""


def decide(
    items: Sequence[Item], supply: int, suffixes: Iterator[Table], probes: Sequence[int]
) -> Decisions:
    """Walk units oldest first. `suffixes` yields, per unit, the table over the younger units.

    Probes can number in the hundreds (a run of equal marginal bids makes every n a break-even
    on the grid), so they move together as arrays and leave as soon as they differ.
    """
    capacity = supply
    chosen: list[bool] = []
    probe_ids = np.asarray(probes, dtype=np.int64)
    probe_left = probe_ids.copy()  # what each open probe has left
    probe_wins: dict[int, bool] = {}
    for (size, value), table in zip(items, suffixes, strict=True):
        take = size <= capacity and value + int(table[capacity - size]) >= int(table[capacity])
        chosen.append(take)
        if take:
            capacity -= size
        if probe_ids.size:
            shifted = table[np.maximum(probe_left - size, 0)]
            probe_take = (probe_left >= size) & (value + shifted >= table[probe_left])
            differ = ~probe_take if take else probe_take
            if differ.any():
                probe_wins.update(dict.fromkeys(probe_ids[differ].tolist(), not take))
                keep = ~differ
                probe_ids, probe_left = probe_ids[keep], probe_left[keep]
            if take:  # the probes still open decided as the main walk did
                probe_left = probe_left - size
    # a probe that never differed holds the same units: nothing older separates them
    probe_wins.update(dict.fromkeys(probe_ids.tolist(), True))
    return Decisions(chosen, probe_wins)
