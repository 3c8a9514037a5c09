"""The ladder a tick publishes: it always answers, even when windows hold every node.

It prices the auction the next tick would run if nothing else changed (tick/clearing.py
`next_bids`: this tick's grants under their windows, the windows ending by then lapsed), so a
rung reads "now" only when a declaration now can win it at the next tick. Rungs 1 … S are the
engine's (docs/market.md "One tick", step 9) on that auction. Past S, a rung needs nodes
that protection windows hold now; it appears with `contestable_at`, the earliest time enough of
those windows end, and the price it would take then against the demand standing now, the
holders included: their nodes bid again once the window ends, as the tick's demand phase turns
held nodes into units (`tick/demand.py`, `releases`). Nodes out of service or in a base load
block have no set return and appear in no rung. Every rung also lists its price at each later
release within the hour, where it changes (`later`): the next release may bring more supply,
so a rung priced at the earliest one is not always the cheapest moment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from burstmarket.auction import IslandInput, Release, later_prices, later_rungs, price_ladder
from burstmarket.clock import NS_PER_HOUR


class LadderRung(NamedTuple):
    """One rung (a tuple, immutable: a tick makes one for every node of the island)."""

    nodes: int
    gpus: int
    price: int
    """µUSD per GPU-hour."""
    contestable_at: int | None
    """None: the next tick can grant it; else when enough windows end (market ns)."""
    later: tuple[tuple[int, int], ...] = ()
    """(at ns, price) from each later time windows end within the hour of the tick, where the
    price changes: a rung priced at its earliest release may cost less at the next one."""


def published_ladder(
    auction: IslandInput, releases: Sequence[Release], now: int
) -> tuple[LadderRung, ...]:
    """The engine's rungs on the next tick's `auction`, then the rungs that the nodes
    `releases` bring could fill; each with its prices at the releases within the hour after
    `now`."""
    rungs: list[tuple[int, int, int, int | None]] = [
        (r.nodes, r.gpus, r.price, None) for r in price_ladder(auction)
    ]
    rungs += [(r.nodes, r.gpus, r.price, r.at) for r in later_rungs(auction, releases)]
    soon = [(at, prices) for at, _, prices in later_prices(auction, releases)]
    soon = [(at, prices) for at, prices in soon if at <= now + NS_PER_HOUR]
    if not soon:  # no window ends within the hour: no rung has a later price
        return tuple(LadderRung(nodes, gpus, price, since) for nodes, gpus, price, since in rungs)
    out = []
    for nodes, gpus, price, since in rungs:
        later: list[tuple[int, int]] = []
        last = price
        for at, prices in soon:
            if (since is None or at > since) and nodes <= len(prices) and prices[nodes - 1] != last:
                later.append((at, prices[nodes - 1]))
                last = prices[nodes - 1]
        out.append(LadderRung(nodes, gpus, price, since, tuple(later)))
    return tuple(out)
