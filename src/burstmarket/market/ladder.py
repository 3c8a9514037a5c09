"""The ladder a tick publishes: it always answers, even when windows hold every node.

Rungs 1 … S are the engine's (docs/market.md "One tick", step 9): the nodes this tick's auction
could give, so a declaration now competes for them at the next tick. Past S, a rung needs nodes
that protection windows hold now; it appears with `contestable_at`, the earliest time enough of
those windows end, and the price it would take then against the demand standing now, the
holders included: their nodes bid again once the window ends, as the tick's demand phase turns
held nodes into units (`tick/demand.py`, `releases`). Nodes out of service or in a base load
block have no set return and appear in no rung.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from burstmarket.auction import Clearing, IslandInput, Release, later_rungs


@dataclass(frozen=True, slots=True)
class LadderRung:
    nodes: int
    gpus: int
    price: int
    """µUSD per GPU-hour."""
    contestable_at: int | None
    """None: contestable in this tick's auction; else when enough windows end (market ns)."""


def published_ladder(
    auction: IslandInput, clearing: Clearing, releases: Sequence[Release]
) -> tuple[LadderRung, ...]:
    """The engine's rungs, then the rungs that the nodes `releases` bring could fill."""
    now = [LadderRung(r.nodes, r.gpus, r.price, None) for r in clearing.ladder]
    later = [LadderRung(r.nodes, r.gpus, r.price, r.at) for r in later_rungs(auction, releases)]
    return (*now, *later)
