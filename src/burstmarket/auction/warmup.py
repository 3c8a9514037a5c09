"""Compile the engine before the market's first tick.

numba compiles a kernel (auction/kernels.py) on its first call, or loads it from the cache
beside the source: seconds on a fresh install, long enough that a service's first contested
tick would overrun its interval and a client waiting on it would give up. `warm_up` clears a
few small islands that between them take every path through the kernels, and prices a
cluster's own ladder on each (what every tick does after its clearing: `growth`), so the service
pays that once at start-up, before it ticks, and says so (cli.py).
"""

from __future__ import annotations

import random

import numpy as np

from burstmarket.auction import growth, kernels
from burstmarket.auction.clear import clear
from burstmarket.auction.types import IslandInput, Protected, Unit

RESERVE = 1_000_000  # µUSD per GPU-hour
GANGS = (1, 1, 1, 2, 4, 8)


def _island(seed: int) -> IslandInput:
    """A contested 64-node island: VM clusters with many single nodes at one price (the
    same-size items a table takes in one step), Kubernetes clusters with gangs at their own
    prices (the core's coalitions), two protected holdings."""
    rng = random.Random(seed)  # noqa: S311 (made-up islands, not secrets)
    units = []
    for c in range(24):
        vm = c % 2 == 0
        price = RESERVE + rng.randrange(30_000) * 100
        for j in range(rng.randrange(1, 12)):
            nodes = 1 if vm else rng.choice(GANGS)
            own = price if vm else price + rng.randrange(5_000) * 100
            units.append(Unit(f"u{c}-{j}", f"c{c}", nodes, own, rng.randrange(50)))
    protected = (Protected("c1", 2, 2 * RESERVE), Protected("c3", 1, 3 * RESERVE // 2))
    return IslandInput(64, 8, RESERVE, tuple(units), protected)


def warm_up() -> None:
    # a large island's exact separation runs its back half on another thread (core.py); these
    # small islands clear on one, so that kernel is compiled here, on the types core passes
    one = np.ones(1, dtype=np.int64)
    kernels.blocking_back(one, np.array([0, 1], dtype=np.int64), one, one, 0, 1)
    for seed in range(3):
        island = _island(seed)
        clear(island)
        supply, g = island.nodes, island.gpus_per_node
        own = frozenset(u.id for u in island.units if u.cluster == "c0")
        others = growth.without(island.units, supply, g, RESERVE, [own], supply)[0]
        for gang in (False, True):  # a VM cluster's rungs, a Kubernetes cluster's
            growth.prices(others, supply, 2, 8, g, RESERVE, gang)
