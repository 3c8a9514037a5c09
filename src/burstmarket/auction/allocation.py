"""Winner determination with MARKET.md's tie-break, and the ladder's tie verdicts, in one pass.

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
    """Walk units oldest first. `suffixes` yields, per unit, the table over the younger units."""
    capacity = supply
    chosen: list[bool] = []
    open_probes = {probe: probe for probe in probes}  # probe capacity -> what it has left
    probe_wins: dict[int, bool] = {}

    def takes(table: Table, size: int, value: int, left: int) -> bool:
        return size <= left and value + int(table[left - size]) >= int(table[left])

    for (size, value), table in zip(items, suffixes, strict=True):
        take = takes(table, size, value, capacity)
        chosen.append(take)
        if take:
            capacity -= size
        for probe, left in list(open_probes.items()):
            probe_take = takes(table, size, value, left)
            if probe_take != take:
                probe_wins[probe] = probe_take
                del open_probes[probe]
            elif probe_take:
                open_probes[probe] = left - size
    # a probe that never differed holds the same units: nothing older separates them
    probe_wins.update(dict.fromkeys(open_probes, True))
    return Decisions(chosen, probe_wins)
