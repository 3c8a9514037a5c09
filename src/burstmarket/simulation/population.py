"""Who the simulated tenants are: drawn once from a seed, so a restart finds the same people."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from burstmarket.states import Kind

ACCOUNTS = (
    "acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell", "cyberdyne",
    "soylent", "aperture", "wonka", "oscorp", "massive", "vandelay", "gringotts",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class IslandPlan:
    id: str
    nodes: int
    gpus_per_node: int
    reserve_price: float
    """USD per GPU-hour: where the simulated operator's reserve changes start from."""


ISLANDS = (
    IslandPlan("ref", 64, 8, 1.0),  # the service's default island, created on an empty store
    IslandPlan("edge", 24, 8, 1.5),
)


@dataclass(frozen=True, slots=True)
class OfferPlan:
    """The base load offers the simulated operator posts on an island, buying open."""

    island: str
    reservable_nodes: int
    cells: tuple[tuple[int, int, float], ...]
    """(size in GPUs, term in hours, USD per GPU-hour): every rate above the highest reserve
    the simulated operator sets (1.25 times the planned one), so no cell turns sold out."""
    bought: tuple[int, int]
    """The cell (size in GPUs, term in hours) the island's base load tenant buys."""


OFFERS = (
    OfferPlan(
        "ref",
        8,
        ((8, 24, 1.6), (16, 24, 1.5), (16, 168, 1.4), (32, 168, 1.35), (64, 720, 1.3)),
        bought=(16, 168),
    ),
)


@dataclass(frozen=True, slots=True)
class TenantSpec:
    name: str
    """The cluster's name (and the key of its token in the simulation's state file)."""
    account: str
    island: str
    kind: Kind
    value: float
    """The most the tenant will pay, USD per GPU-hour (its ceiling, or its cluster limit)."""
    typical_nodes: float
    """VM: nodes wanted at a demand factor of 1. Kubernetes: nodes its jobs keep busy."""
    ladder_aware: bool = False
    """Bids the price to win (plus a margin) rather than its full value."""
    spend_limit: float | None = None
    """USD per rolling 24 h, set once at start."""
    base_load: tuple[int, int] | None = None
    """A Kubernetes tenant that buys this cell (GPUs, term hours) of its island's base load
    offers on its own, buys again when the block ends, and runs jobs smaller than a node on
    it (packing enabled by the operator)."""


TYPICAL_LOAD = 1.4
"""Typical demand of an island's tenants, in islands' worth of nodes."""
JOB_NODES = (1, 2, 2, 4, 4, 8)
"""Whole nodes per Kubernetes job: mostly small, now and then a large gang."""
JOB_MEDIAN_MINUTES = 120.0
JOB_SIGMA = 0.8
SMALL_JOBS = ((1, 2), (1, 4), (2, 2), (1, 6), (2, 3), (3, 2))
"""(pods, GPUs per pod) of the base load tenant's jobs smaller than a node of 8 GPUs."""
SMALL_JOB_LOAD = 0.75
"""The share of its block's GPUs the base load tenant's small jobs keep busy."""


def mean_job_hours() -> float:
    """The mean of the log-normal job duration, in hours."""
    return JOB_MEDIAN_MINUTES / 60 * math.exp(JOB_SIGMA**2 / 2)


def mean_job_nodes() -> float:
    return sum(JOB_NODES) / len(JOB_NODES)


def mean_small_job_gpus() -> float:
    return sum(pods * gpus for pods, gpus in SMALL_JOBS) / len(SMALL_JOBS)


def valuation(rng: random.Random, reserve: float) -> float:
    """A price ceiling from a log-normal spread around 2.2x the reserve: most tenants clear,
    a few sit at or below the reserve and learn `bid-too-low`."""
    return round(max(0.5, reserve * rng.lognormvariate(math.log(2.2), 0.4)), 2)


def draw(seed: int, islands: list[IslandPlan]) -> list[TenantSpec]:
    """The tenants of each island, sized so that their typical demand is 1.4 times the
    island's supply: half from VM clusters, half from Kubernetes jobs; and on an island with
    base load offers, a Kubernetes tenant that buys a block and runs small jobs on it."""
    rng = random.Random(seed)  # noqa: S311 (a simulation, not a secret)
    accounts = list(ACCOUNTS)
    rng.shuffle(accounts)
    specs: list[TenantSpec] = []
    n = 0
    for plan in islands:
        island, nodes, reserve = plan.id, plan.nodes, plan.reserve_price
        vms, k8s = max(2, nodes // 10), max(1, nodes // 16)
        shares = [rng.uniform(0.5, 1.5) for _ in range(vms)]
        for i, share in enumerate(shares):
            account = accounts[n % len(accounts)]
            n += 1
            value, typical = valuation(rng, reserve), TYPICAL_LOAD / 2 * nodes * share / sum(shares)
            # the first VM tenant of an island caps its day below what its peak would cost
            limit = round(typical * plan.gpus_per_node * value * 24 * 0.8, 2) if i == 0 else None
            specs.append(
                TenantSpec(
                    name=f"{account}-{island}-vm",
                    account=account,
                    island=island,
                    kind="vm",
                    value=value,
                    typical_nodes=typical,
                    ladder_aware=i % 3 == 1,
                    spend_limit=limit,
                )
            )
        for _ in range(k8s):
            account = accounts[n % len(accounts)]
            n += 1
            specs.append(
                TenantSpec(
                    name=f"{account}-{island}-k8s",
                    account=account,
                    island=island,
                    kind="k8s",
                    value=valuation(rng, reserve),
                    typical_nodes=TYPICAL_LOAD / 2 * nodes / k8s,
                )
            )
    # one more tenant per island with offers, drawn last so the others stay who they were
    for offer in OFFERS:
        on = next((p for p in islands if p.id == offer.island), None)
        if on is None:
            continue
        account = accounts[n % len(accounts)]
        n += 1
        size, _ = offer.bought
        specs.append(
            TenantSpec(
                name=f"{account}-{on.id}-base-k8s",
                account=account,
                island=on.id,
                kind="k8s",
                value=valuation(rng, on.reserve_price),
                typical_nodes=SMALL_JOB_LOAD * size / on.gpus_per_node,
                base_load=offer.bought,
            )
        )
    return specs
