"""One clearing of the island (docs/market.md "One tick", steps 4-7): the demand of every
cluster not on billing hold, the contestable supply, and the nodes fixed this tick (under an open
window, or owed as replacements) protected at their cap (`DemandKind.window_cap`). Nodes
stepping down from a block's term are fixed too, outside the auction: under their window they
pay their lock, exactly (`with_step_downs`). The ladder's later rungs come from the same rules
(`window_releases`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Container, Iterable
from dataclasses import dataclass

from burstmarket.auction import (
    Clearing,
    IslandInput,
    Protected,
    Release,
    Unit,
    clear,
    with_fixed,
)
from burstmarket.market.kinds import KINDS, Aged, Demand
from burstmarket.market.model import BILLING_HOLD, Age, Cluster, Node
from burstmarket.market.tick.demand import held_units, short_units
from burstmarket.market.tick.tick_state import TickState
from burstmarket.market.tick.types import StepDown


@dataclass(frozen=True, slots=True)
class Bids:
    """One round of the auction: its input, and what each unit stands for."""

    auction: IslandInput
    units: list[Unit]
    """Oldest first (the order the auction breaks ties in)."""
    demand: dict[str, Demand]
    """Unit id -> what it stands for."""
    protected: list[Node]
    """Market nodes under an open window: fixed this tick, assessed up to their cap."""
    stepping_down: list[Node]
    """Nodes stepping down from a block's term under their window: fixed, at their lock."""


def clear_round(s: TickState) -> tuple[Bids, Clearing]:
    """The island's demand now, and the auction's outcome."""
    bids = gather_bids(s)
    return bids, clear(bids.auction)


def next_bids(s: TickState, interval_ns: int) -> Bids:
    """The auction the next tick would run if nothing else changed: this tick's outcome applied,
    one interval later (the windows ending by then lapsed, this tick's grants under theirs).
    What the ladders price (market/ladder.py, market/own_ladder.py); the tick's own refusals
    stay as they were, and the jobs it left out."""
    now, refused, left_out = s.now, dict(s.refused), dict(s.left_out)
    s.now = now + interval_ns
    try:
        return gather_bids(s)
    finally:
        s.now = now
        s.refused.clear()
        s.refused.update(refused)
        s.left_out.clear()
        s.left_out.update(left_out)


def gather_bids(s: TickState) -> Bids:
    """The island's demand at `s.now`. A unit is dated by the demand it serves, so two equal
    bids never swap a node; equal ages never fall back to an id."""
    aged: list[Aged] = []
    protected: list[Node] = []
    stepping_down: list[Node] = []
    locks: Counter[tuple[str, int]] = Counter()
    for c in s.sorted_clusters():
        if s.refused.get(c.id) == BILLING_HOLD:
            continue
        kind = KINDS[c.kind]
        held = s.held(c.id)
        served, waiting = kind.served_ages(s, c, held)
        lapsed = []
        for n in held:
            if steps_down(s, c, n):
                stepping_down.append(n)
            elif n.window_open(s.now):
                locks[(c.id, kind.window_cap(s, c, n))] += 1
                protected.append(n)
            else:
                lapsed.append(n)
        aged += held_units(s, c, lapsed, served)
        aged += short_units(s, c)
        aged += kind.new_units(s, c, waiting)
    demand = {u.id: d for _, u, d in aged}
    reclaimable = sum([len(d.nodes) for d in demand.values()])
    owed = s.owed()
    # replacements still owed take reclaimed nodes after the auction, ahead of every bid: they
    # are held (and pay) from this tick, like those that found a free node
    for lost in owed[: s.free_count() + reclaimable]:
        c = s.clusters[lost.cluster or ""]
        locks[(c.id, KINDS[c.kind].window_cap(s, c, lost))] += 1
    # oldest first, equal ages by id: the keys made in one pass, not a call per unit
    keys = [(age, u.id) for age, u, _ in aged]
    units = [aged[i][1] for i in sorted(range(len(aged)), key=keys.__getitem__)]
    auction = IslandInput(
        nodes=max(0, s.free_count() + reclaimable - len(owed)),
        gpus_per_node=s.gpus_per_node,
        reserve_price=s.reserve_price,
        units=tuple(units),
        protected=tuple(Protected(c, k, price) for (c, price), k in sorted(locks.items())),
    )
    return Bids(auction, units, demand, protected, stepping_down)


def steps_down(s: TickState, c: Cluster, n: Node) -> bool:
    """A node under an open window with no minimum hold, of a kind whose grants carry one: one
    stepping down from a block's term (every grant the market makes of that kind carries a
    hold; a replacement inherits it)."""
    return KINDS[c.kind].hold_ns is not None and n.window_open(s.now) and n.hold_until is None


def step_down_groups(nodes: Iterable[Node], unpriced: Container[str]) -> tuple[StepDown, ...]:
    """The nodes stepping down from a block that pay a lock, by cluster and lock; `unpriced`:
    the ids of those the tick locked at its clearing's lowest rate (`lock_step_downs`)."""
    locks: Counter[tuple[str, int, bool]] = Counter()
    for n in nodes:
        if n.cluster is not None and n.block is None and n.locked_price is not None:
            locks[(n.cluster, n.locked_price, n.id in unpriced)] += 1
    return tuple(StepDown(c, k, price, fresh) for (c, price, fresh), k in sorted(locks.items()))


def with_step_downs(clearing: Clearing, step_downs: Iterable[StepDown], g: int) -> Clearing:
    """The clearing with the nodes stepping down from a block, each paying its lock: "a node
    running work bills the locked price until the window closes" (docs/market.md "Base load").
    Nodes locked at the lowest rate this clearing gives are locked first (`lock_step_downs`)."""
    locks: Counter[tuple[str, int]] = Counter()
    for group in step_downs:
        locks[(group.cluster, group.locked_price)] += group.nodes
    holds = [Protected(c, k, price) for (c, price), k in sorted(locks.items())]
    return with_fixed(clearing, holds, g)


def window_releases(s: TickState, protected: Iterable[Node]) -> list[Release]:
    """The nodes under a window now, by the time it ends, each batch with the units its holders
    will bid as then (`held_units`): what the ladder's later rungs are priced from."""
    ending: dict[int, dict[str, list[Node]]] = defaultdict(lambda: defaultdict(list))
    for n in sorted(protected, key=lambda n: n.idx):
        if n.cluster is not None and n.window_ends_at is not None:
            ending[n.window_ends_at][n.cluster].append(n)
    served: dict[str, dict[str, Age]] = {}
    out = []
    for at, by_cluster in sorted(ending.items()):
        units: list[Unit] = []
        for cid, nodes in sorted(by_cluster.items()):
            c = s.clusters[cid]
            if cid not in served:
                served[cid] = KINDS[c.kind].served_ages(s, c, s.held(cid))[0]
            units += [u for _, u, _ in held_units(s, c, nodes, served[cid])]
        out.append(Release(at, sum(len(nodes) for nodes in by_cluster.values()), tuple(units)))
    return out
