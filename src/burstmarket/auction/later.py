"""The ladder past the contestable supply: rungs that only nodes fixed now could fill.

docs/market.md's ladder (`clear`) prices n = 1 … S, what this tick's auction could give. A tenant
asking for more still wants an answer: when enough fixed nodes come back to the market, and what
it would take then. A `Release` says when fixed nodes become contestable and which demand comes
with them (their holders', competing at its price once the window ends). Rung n is priced at
the first release that brings the supply to n, against the demand standing now plus the
holders released by then: nothing is guessed about demand yet to come.

One knapsack table, grown release by release (a table does not depend on the order its items
went in), answers every rung. The exact ladder would also walk the units by age to settle exact
ties, a full pass per release; instead a rung on an exact break-even is priced one grid step
above it, the lowest price that wins whichever way the tie would go. A later rung therefore
reads the exact ladder of that moment or one step (0.0001) above it, never below.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby

import numpy as np

from burstmarket.auction.knapsack import Table, add_group, empty
from burstmarket.auction.types import IslandInput, Unit
from burstmarket.money import PRICE_STEP


@dataclass(frozen=True, slots=True)
class Release:
    """`nodes` fixed nodes that become contestable at `at`, with the units their holders bid."""

    at: int
    nodes: int
    units: tuple[Unit, ...] = ()


@dataclass(frozen=True, slots=True)
class LaterRung:
    """Price to win `nodes` whole nodes once the release at `at` has come."""

    nodes: int
    gpus: int
    price: int
    at: int


def later_rungs(island: IslandInput, releases: Sequence[Release]) -> tuple[LaterRung, ...]:
    """Rungs S + 1 … S + every released node, in order; releases may come in any order."""
    rungs: list[LaterRung] = []
    supply = island.nodes
    for at, top, prices in later_prices(island, releases):
        g = island.gpus_per_node
        rungs += [LaterRung(n, n * g, prices[n - 1], at) for n in range(supply + 1, top + 1)]
        supply = top
    return tuple(rungs)


def later_prices(
    island: IslandInput, releases: Sequence[Release]
) -> Iterator[tuple[int, int, list[int]]]:
    """At each time a release comes, in order: the supply then and the price of n = 1 … that
    supply, against the demand standing now plus the holders released by then."""
    if not releases:
        return
    g, reserve = island.gpus_per_node, island.reserve_price
    ordered = sorted(releases, key=lambda release: release.at)
    supply = island.nodes
    table = empty(supply + sum(release.nodes for release in ordered) + 1)
    demanded = 0

    def bid(units: Iterable[Unit]) -> None:
        nonlocal table, demanded
        bidding = [u for u in units if u.price >= reserve]  # as `clear`: the rest never clears
        table = add_group(table, [(u.nodes, (u.price - reserve) * u.nodes * g) for u in bidding])
        demanded += sum(u.nodes for u in bidding)

    bid(island.units)
    for at, coming in groupby(ordered, key=lambda release: release.at):
        together = list(coming)
        bid(u for release in together for u in release.units)
        supply += sum(release.nodes for release in together)
        yield at, supply, _prices(table, supply, g, reserve, demanded)


def _prices(table: Table, supply: int, g: int, reserve: int, demanded: int) -> list[int]:
    n = np.arange(1, supply + 1)
    displaced = table[supply] - table[supply - n]
    # the next grid price above the break-even (one step above it when it is on the grid)
    above = reserve + (displaced // (n * g * PRICE_STEP) + 1) * PRICE_STEP
    # room for every bid and the newcomer too: the reserve
    prices: list[int] = np.where(demanded + n <= supply, reserve, above).tolist()
    return prices
