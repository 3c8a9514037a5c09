"""The price for one cluster to hold more nodes, its own demand left out (docs/market.md "The
cluster's own ladder").

A cluster c grows by n nodes when its units win M nodes in all: a VM cluster's M = L + n single
units (its L held nodes out of their window and n more, all at the new ceiling p); a Kubernetes
cluster's one new gang of M = n nodes. With W(x) = V(x, c̄), the best value of everyone else's
demand on x nodes, c holds all M when, for every m < M it could be cut to,

    (p − r)·g·(M − m) > W(S − m) − W(S − M)

(a gang has only m = 0). The rung is the lowest grid price above every such break-even: r when
there is room for every bid and c's too. A rung exactly on a break-even is priced one grid step
above it, the lowest price that wins whichever way the tie would go (as later.py's rungs).

W is read at the capacities S − M … S only: `without` asks the compiled `values_without` (the
VCG payments' own kernel) for each cluster's row, one pass over the items for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from burstmarket.auction import kernels
from burstmarket.auction.clear import suffix_block
from burstmarket.auction.knapsack import Table, add_group, empty
from burstmarket.auction.types import Unit
from burstmarket.money import PRICE_STEP

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Others:
    """W(x) = V(x, c̄) for x in [low, supply]: `values[x − low]`; and the nodes they bid for."""

    low: int
    values: Ints
    nodes: int

    def at(self, x: int) -> int:
        return int(self.values[x - self.low])


def bidding(units: Sequence[Unit], reserve: int) -> list[Unit]:
    """The units that bid at all (`clear` leaves out those under the reserve)."""
    return [u for u in units if u.price >= reserve]


def table(units: Sequence[Unit], length: int, g: int, reserve: int) -> Table:
    """V(x) for x = 0 … length − 1 over `units` (all of them bidding)."""
    return add_group(empty(length), [(u.nodes, (u.price - reserve) * u.nodes * g) for u in units])


def full(units: Sequence[Unit], supply: int, g: int, reserve: int) -> Others:
    """Everyone's demand, for a cluster with none of its own in the auction."""
    kept = bidding(units, reserve)
    return Others(0, table(kept, supply + 1, g, reserve), sum(u.nodes for u in kept))


def without(
    units: Sequence[Unit],
    supply: int,
    g: int,
    reserve: int,
    removed: Sequence[frozenset[str]],
    depth: int,
) -> list[Others]:
    """For each set of unit ids in `removed` (one cluster's own demand, the sets disjoint),
    V(x) over every other unit, for x in [S − depth, S]."""
    kept = bidding(units, reserve)
    if not removed:
        return []
    group = {uid: k for k, ids in enumerate(removed) for uid in ids}
    low = max(0, supply - depth)
    base_units = [u for u in kept if u.id not in group]
    base = table(base_units, supply + 1, g, reserve)
    total = sum(u.nodes for u in kept)
    mine = [u for u in kept if u.id in group]
    if not mine:
        return [Others(low, base[low:].copy(), total) for _ in removed]
    codes = np.array([group[u.id] for u in mine], dtype=np.int64)
    sizes = np.array([u.nodes for u in mine], dtype=np.int64)
    values = np.array([(u.price - reserve) * u.nodes * g for u in mine], dtype=np.int64)
    order = np.lexsort((values, sizes, codes))
    item_sizes, item_values, starts = kernels.bundle(
        codes[order], sizes[order], values[order], len(removed)
    )
    own = np.zeros(len(removed), dtype=np.int64)
    np.add.at(own, codes, sizes)
    # the clusters that could use the most nodes first (see kernels.values_without)
    queried = np.argsort(-own, kind="stable")
    pick = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in queried] + [[]])
    pick = pick.astype(np.int64)
    at = np.tile(np.arange(low, supply + 1, dtype=np.int64), (len(removed), 1))
    found = kernels.values_without(
        base,
        np.concatenate([[0], np.cumsum(np.diff(starts)[queried])]),
        item_sizes[pick],
        item_values[pick],
        at,
        suffix_block(len(removed)),
    )
    rows = found[np.argsort(queried)]
    return [Others(low, rows[k], total - int(own[k])) for k in range(len(removed))]


def prices(
    others: Others, supply: int, held: int, rungs: int, g: int, reserve: int, gang: bool
) -> Ints:
    """The price of rungs n = 1 … `rungs`, −1 where more than `supply` nodes in all."""
    rows = prices_of([others], supply, np.array([held]), rungs, g, reserve, np.array([gang]))
    one: Ints = rows[0]
    return one


def prices_of(
    others: Sequence[Others],
    supply: int,
    held: Ints,
    rungs: int,
    g: int,
    reserve: int,
    gang: npt.NDArray[np.bool_],
) -> Ints:
    """`prices` of many clusters in one pass: row k for `others[k]`, `held[k]`, `gang[k]`."""
    # the most a rung reads: W(S − m) for m ≤ held + n; a row is cut there, which changes
    # nothing (growth_steps stops at a row's end only past what it reads)
    width = min(supply, int(held.max(initial=0)) + rungs) + 1
    best = np.zeros((len(others), width), dtype=np.int64)
    lengths = np.zeros(len(others), dtype=np.int64)
    for k, o in enumerate(others):
        if supply >= o.low:
            row = o.values[supply - o.low :: -1][:width]  # best[m] = W(S − m)
            best[k, : len(row)] = row
            lengths[k] = len(row)
    steps = kernels.growth_steps_rows(best, lengths, held, rungs, g * PRICE_STEP, gang)
    total = np.arange(1, rungs + 1) + np.where(gang, 0, held)[:, None]
    bidders = np.array([o.nodes for o in others], dtype=np.int64)
    room = bidders[:, None] + total <= supply  # room for every bid and the cluster's too
    found = np.where(room, reserve, reserve + steps * PRICE_STEP)
    return np.where(steps < 0, -1, found)
