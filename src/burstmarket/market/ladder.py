"""The ladder a tick publishes: it always answers, even when windows hold every node.

Rungs 1 … S are the engine's (MARKET.md step 6): the nodes this tick's auction could give, so a
declaration now competes for them at the next tick. Past S, a rung needs nodes that protection
windows hold now; it appears with `contestable_at`, the earliest time enough of those windows
end, and the price it would take then against the demand standing now, the holders included
(their nodes bid again once the window ends, as `tick._demand` turns them into units: a VM node
at its cluster's live ceiling, an idle Kubernetes node at its locked price, a job's nodes as one
gang at the job's price). Nodes out of service or in a base load block have no set return and
appear in no rung.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from burstmarket.auction import Clearing, IslandInput, Release, Unit, later_rungs
from burstmarket.market.model import Cluster, Job, Node


@dataclass(frozen=True, slots=True)
class LadderRung:
    nodes: int
    gpus: int
    price: int
    """µUSD per GPU-hour."""
    contestable_at: int | None
    """None: contestable in this tick's auction; else when enough windows end (market ns)."""


def published_ladder(
    auction: IslandInput,
    clearing: Clearing,
    protected: Iterable[Node],
    clusters: Mapping[str, Cluster],
    jobs: Mapping[tuple[str, str], Job],
) -> tuple[LadderRung, ...]:
    """The engine's rungs, then the rungs that the nodes under `protected` windows could fill."""
    now = [LadderRung(r.nodes, r.gpus, r.price, None) for r in clearing.ladder]
    releases = _releases(protected, clusters, jobs)
    later = [LadderRung(r.nodes, r.gpus, r.price, r.at) for r in later_rungs(auction, releases)]
    return (*now, *later)


def _releases(
    protected: Iterable[Node], clusters: Mapping[str, Cluster], jobs: Mapping[tuple[str, str], Job]
) -> list[Release]:
    """Protected nodes by the time their window ends, each with the unit it will bid as."""
    gangs: dict[tuple[int, str, str], list[Node]] = defaultdict(list)
    units: dict[int, list[Unit]] = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    for n in protected:
        if n.cluster is None or n.window_ends_at is None:
            continue
        c = clusters[n.cluster]
        at = n.window_ends_at
        counts[at] += 1
        job = jobs.get((c.id, n.job)) if n.job is not None else None
        if job is not None:
            gangs[(at, c.id, job.name)].append(n)
            continue
        price = (c.max_price if c.kind == "vm" else n.locked_price) or 0
        units[at].append(Unit(f"n:{n.id}", c.id, 1, price, n.granted_at or 0))
    for (at, cid, name), nodes in gangs.items():
        price = jobs[(cid, name)].price(clusters[cid]) or 0
        since = min(n.granted_at or 0 for n in nodes)
        units[at].append(Unit(f"r:{cid}/{name}@{at}", cid, len(nodes), price, since))
    return [Release(at, counts[at], tuple(units[at])) for at in sorted(counts)]
