"""What each cluster brings to its own ladder (market/own_ladder.py), read off the auction the
next tick would run (clearing.py `next_bids`): its own units there, its held nodes out of their
window, and what the rest of its holding is billed."""

from __future__ import annotations

from collections import defaultdict

from burstmarket.auction import Clearing
from burstmarket.market.kinds import KINDS
from burstmarket.market.own_ladder import Holding
from burstmarket.market.tick.clearing import Bids
from burstmarket.market.tick.tick_state import TickState


def holdings(s: TickState, bids: Bids, clearing: Clearing) -> list[Holding]:
    """One per cluster of the island. A VM cluster's every unit bids the new ceiling, its
    nodes under a window keep their lock as the cap; a Kubernetes cluster grows by a new job,
    its pending jobs left out and the rest of its holding billed as this tick bills it."""
    units: dict[str, list[str]] = defaultdict(list)
    held: dict[str, int] = defaultdict(int)
    for u in bids.units:
        d = bids.demand[u.id]
        vm = not KINDS[d.cluster.kind].runs_jobs
        if vm or d.stands_for == "job":
            units[u.cluster].append(u.id)
        if vm and d.stands_for == "held":
            held[u.cluster] += 1
    caps: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for n in bids.protected:
        if n.cluster is not None and n.window_ends_at is not None:
            caps[n.cluster].append((n.window_ends_at, n.locked_price or 0))
    out = []
    for c in s.sorted_clusters():
        if KINDS[c.kind].runs_jobs:
            paid = clearing.clusters[c.id].payment if c.id in clearing.clusters else 0
            out.append(Holding(c.id, frozenset(units[c.id]), 0, True, paid=paid))
        else:
            out.append(
                Holding(c.id, frozenset(units[c.id]), held[c.id], False, caps=tuple(caps[c.id]))
            )
    return out


def newcomers() -> dict[str, Holding]:
    """Kind -> a cluster of that kind with nothing in the auction (one made since the tick): a
    VM one grows by single units, a Kubernetes one by a new job. Their ids are no cluster's."""
    return {
        kind: Holding(f"\x00{kind}", frozenset(), 0, KINDS[kind].runs_jobs)
        for kind in sorted(KINDS)
    }
