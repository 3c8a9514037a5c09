"""The auction's demand (docs/market.md "Demand"): held nodes out of their window bid again,
dated by the demand they serve; running jobs short of nodes bid for the rest; new demand bids as
its kind says (`DemandKind.new_units`: as far as the spend limit leaves room for its worst
case). Each unit comes with its age (the auction's tie order) and what it stands for (to apply
its outcome).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from burstmarket.market.kinds import KINDS, Aged, Demand, unit
from burstmarket.market.model import Age, Cluster, Node
from burstmarket.market.tick.tick_state import TickState


def held_units(
    s: TickState, c: Cluster, nodes: Iterable[Node], served: dict[str, Age]
) -> list[Aged]:
    """Held nodes as the units they bid as once out of their window: a job's nodes as one gang
    at the job's price and age; a node with no job as its kind says (`DemandKind.lone_unit`: a
    VM node at the cluster's live ceiling, with the age of the declared unit it serves,
    `served`; an idle Kubernetes node at its lock, dated by its grant)."""
    kind = KINDS[c.kind]
    gangs: dict[str, list[Node]] = defaultdict(list)
    out = []
    for n in nodes:
        job = s.job_on(n)
        if job is not None:
            gangs[job.name].append(n)
        else:
            out.append(kind.lone_unit(s, c, n, served))
    for name, gang in sorted(gangs.items()):
        job = s.jobs[(c.id, name)]
        d = Demand("running", c, gang, job, job.price(c) or 0)
        out.append(unit(f"r:{c.id}/{name}", d, len(gang), job.age))
    return out


def short_units(s: TickState, c: Cluster) -> list[Aged]:
    """Running jobs short of nodes out of service with no window left: the rest bids again."""
    out = []
    for job in s.jobs_of(c, "running"):
        missing = job.nodes - s.placed(job) - s.owed_to(job)
        if missing > 0:
            d = Demand("short", c, job=job, price=job.price(c) or 0)
            out.append(unit(f"s:{c.id}/{job.name}", d, missing, job.age))
    return out
