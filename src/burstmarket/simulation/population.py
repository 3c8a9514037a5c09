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


TYPICAL_LOAD = 1.4
"""Typical demand of an island's tenants, in islands' worth of nodes."""
JOB_NODES = (1, 2, 2, 4, 4, 8)
"""Whole nodes per Kubernetes job: mostly small, now and then a large gang."""
JOB_MEDIAN_MINUTES = 120.0
JOB_SIGMA = 0.8


def mean_job_hours() -> float:
    """The mean of the log-normal job duration, in hours."""
    return JOB_MEDIAN_MINUTES / 60 * math.exp(JOB_SIGMA**2 / 2)


def mean_job_nodes() -> float:
    return sum(JOB_NODES) / len(JOB_NODES)


def valuation(rng: random.Random, reserve: float) -> float:
    """A price ceiling from a log-normal spread around 2.2x the reserve: most tenants clear,
    a few sit at or below the reserve and learn `bid-too-low`."""
    return round(max(0.5, reserve * rng.lognormvariate(math.log(2.2), 0.4)), 2)


def draw(seed: int, islands: list[IslandPlan]) -> list[TenantSpec]:
    """The tenants of each island, sized so that their typical demand is 1.4 times the
    island's supply: half from VM clusters, half from Kubernetes jobs."""
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
    return specs
