"""Large, realistic islands from a seed (shared by bench/ and tests/auction/), and the CP-SAT
formulation of winner determination both use as an independent reference.

The market modelled: a reserve of 1 USD per GPU-hour and a going rate near 2.20 USD; each
cluster's ceiling spread around it (log-normal, a few under the reserve); a few clusters hold
nodes under an open protection window. Three families:

- `island` (friendly): VM clusters declare many 1-node units at one price and mostly one
  `since`, Kubernetes clusters run gangs of 1 to 64 nodes (most small) at the cluster's limit
  price or, for one job in five, a job's own. Equal units bundle.
- `kubernetes_heavy`: nine clusters in ten run Kubernetes jobs, every job at its own limit price,
  each cluster several jobs of different gang sizes (any size from 1 to 64, most small), every
  unit a different age. The core's hard case: many gangs that would displace many winners.
- `vm_heavy`: nine clusters in ten are VM clusters, each declaration at its own ceiling and
  grown step by step (every unit a different age); the rest as in `kubernetes_heavy`.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from dataclasses import dataclass

from burstmarket.auction import IslandInput, Protected, Unit
from burstmarket.money import PRICE_STEP

USD = 1_000_000
RESERVE = 1 * USD
GOING_RATE = 2_200_000
GANG_SIZES = (1, 2, 4, 8, 16, 32, 64)
GANG_WEIGHTS = (55, 18, 11, 8, 5, 2, 1)


def _grid(price: float) -> int:
    return max(PRICE_STEP, round(price / PRICE_STEP) * PRICE_STEP)


def island(
    nodes: int,
    units: int,
    clusters: int,
    *,
    protected_clusters: int = 20,
    gpus_per_node: int = 8,
    seed: int = 0,
) -> IslandInput:
    """An island of `nodes` nodes (the contestable supply is what protected holdings leave),
    with exactly `units` demand units spread over `clusters` clusters."""
    rng = random.Random(seed)
    # a few clusters hold most of the demand: heavy-tailed weights, at least one unit each
    weights = [rng.paretovariate(1.2) for _ in range(clusters)]
    counts = [1] * clusters
    for k in rng.choices(range(clusters), weights=weights, k=units - clusters):
        counts[k] += 1

    demand: list[Unit] = []
    ceilings: dict[str, int] = {}
    for k, count in enumerate(counts):
        vm = rng.random() < 0.45
        name = f"{'vm' if vm else 'k8s'}-{k:05d}"
        ceiling = _grid(GOING_RATE * math.exp(rng.gauss(0, 0.25)))
        ceilings[name] = ceiling
        declared = rng.randrange(86_400)
        for j in range(count):
            if vm:
                # one declaration of `count` nodes; held nodes are dated from their own grant
                since = declared if rng.random() < 0.7 else rng.randrange(86_400)
                demand.append(Unit(f"{name}/{j}", name, 1, ceiling, since))
            else:
                size = rng.choices(GANG_SIZES, weights=GANG_WEIGHTS)[0]
                own = rng.random() < 0.2
                price = _grid(ceiling * rng.uniform(0.85, 1.15)) if own else ceiling
                demand.append(Unit(f"{name}/{j}", name, size, price, rng.randrange(86_400)))
    rng.shuffle(demand)

    holders = rng.sample(sorted(ceilings), min(protected_clusters, clusters))
    protected = tuple(
        Protected(name, rng.choice((1, 1, 2, 4, 8)), ceilings[name]) for name in holders
    )
    return IslandInput(
        nodes=nodes - sum(p.nodes for p in protected),
        gpus_per_node=gpus_per_node,
        reserve_price=RESERVE,
        units=tuple(demand),
        protected=protected,
    )


def kubernetes_heavy(
    nodes: int, units: int, clusters: int, *, protected_clusters: int = 20, seed: int = 0
) -> IslandInput:
    """Heterogeneous demand, Kubernetes-heavy: see the module's docstring."""
    return _heterogeneous(nodes, units, clusters, 0.1, protected_clusters, seed)


def vm_heavy(
    nodes: int, units: int, clusters: int, *, protected_clusters: int = 20, seed: int = 0
) -> IslandInput:
    """Heterogeneous demand, VM-heavy: see the module's docstring."""
    return _heterogeneous(nodes, units, clusters, 0.9, protected_clusters, seed)


def _gang_size(rng: random.Random) -> int:
    """1 to 64 nodes, any size, most small: a power of two, or a size just off one."""
    size: int = rng.choices(GANG_SIZES, weights=GANG_WEIGHTS)[0]
    if size > 2 and rng.random() < 0.5:
        size = rng.randint(size // 2 + 1, size)
    return size


def _heterogeneous(
    nodes: int, units: int, clusters: int, vm_share: float, protected_clusters: int, seed: int
) -> IslandInput:
    rng = random.Random(seed)
    weights = [rng.paretovariate(1.2) for _ in range(clusters)]
    counts = [1] * clusters
    for k in rng.choices(range(clusters), weights=weights, k=units - clusters):
        counts[k] += 1
    # every unit a different age: distinct milliseconds within the last day, dealt out at random
    ages = iter(rng.sample(range(86_400_000), units))

    demand: list[Unit] = []
    ceilings: dict[str, int] = {}
    for k, count in enumerate(counts):
        vm = rng.random() < vm_share
        name = f"{'vm' if vm else 'k8s'}-{k:05d}"
        ceiling = _grid(GOING_RATE * math.exp(rng.gauss(0, 0.25)))
        ceilings[name] = ceiling
        for j in range(count):
            if vm:
                demand.append(Unit(f"{name}/{j}", name, 1, ceiling, next(ages)))
            else:
                price = _grid(ceiling * rng.uniform(0.7, 1.3))
                demand.append(Unit(f"{name}/{j}", name, _gang_size(rng), price, next(ages)))
    rng.shuffle(demand)

    holders = rng.sample(sorted(ceilings), min(protected_clusters, clusters))
    protected = tuple(
        Protected(name, rng.choice((1, 1, 2, 4, 8)), ceilings[name]) for name in holders
    )
    return IslandInput(
        nodes=nodes - sum(p.nodes for p in protected),
        gpus_per_node=8,
        reserve_price=RESERVE,
        units=tuple(demand),
        protected=protected,
    )


@dataclass(frozen=True)
class Solved:
    value: int
    optimal: bool
    seconds: float


def cpsat_value(
    island: IslandInput,
    *,
    without: frozenset[str] = frozenset(),
    time_limit: float = 30.0,
    workers: int = 2,
) -> Solved:
    """max Σ (p − r)·k·g over whole units fitting the supply, by CP-SAT (demand of `without`
    removed). Units alike in size and value are interchangeable, so each such class is one
    integer variable counting how many of them win: the same optimum, far less symmetry."""
    # imported here so that a process only generating islands (the memory probe) stays lean
    from ortools.sat.python import cp_model

    g, r = island.gpus_per_node, island.reserve_price
    classes = Counter(
        (u.nodes, (u.price - r) * u.nodes * g)
        for u in island.units
        if u.price >= r and u.cluster not in without and u.nodes <= island.nodes
    )
    model = cp_model.CpModel()
    chosen = [
        (model.new_int_var(0, count, f"n{size}_{value}"), size, value)
        for (size, value), count in sorted(classes.items())
    ]
    model.add(sum(size * var for var, size, _ in chosen) <= island.nodes)
    model.maximize(sum(value * var for var, _, value in chosen))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    started = time.perf_counter()
    status = solver.solve(model)
    seconds = time.perf_counter() - started
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no solution: {solver.status_name(status)}")
    return Solved(round(solver.objective_value), status == cp_model.OPTIMAL, seconds)
