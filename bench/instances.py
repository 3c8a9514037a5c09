"""Large, realistic islands from a seed (shared by bench/ and tests/auction/test_cpsat.py), and
the CP-SAT formulation of winner determination both use as an independent reference.

The market modelled: a reserve of 1 USD per GPU-hour and a going rate near 2.20 USD; each
cluster's ceiling spread around it (log-normal, a few under the reserve); VM clusters declare
many 1-node units at one price, Kubernetes clusters run gangs of 1 to 64 nodes (most small) at the
cluster's limit price or a job's own; a few clusters hold nodes under an open protection window.
Ages are seconds within the last day, with ties (a VM declaration's units share one `since`).
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
