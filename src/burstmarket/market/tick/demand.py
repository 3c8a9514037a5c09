"""The auction's demand, kind by kind (docs/market.md "Demand"): held nodes out of their window
bid again, dated by the demand they serve; running jobs short of nodes bid for the rest; new
demand bids as far as the spend limit leaves room for its worst case. Each unit comes with its
age (the auction's tie order) and what it stands for (to apply its outcome).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from burstmarket.auction import Unit
from burstmarket.market.guard import grant_span, worst_case
from burstmarket.market.model import SPEND_LIMIT, Age, Cluster, Job, Node, unit_ages
from burstmarket.market.tick.state import TickState


@dataclass(slots=True)
class Demand:
    """What one auction unit stands for, to apply its outcome."""

    kind: Literal["held", "idle", "running", "vm", "job", "short"]
    """Nodes held (a VM node, an idle node, a running gang) or wanted (VM units, a pending
    job, a running job's missing nodes)."""
    cluster: Cluster
    nodes: list[Node] = field(default_factory=list)
    job: Job | None = None
    price: int = 0


Aged = tuple[Age, Unit, Demand]


def _aged(uid: str, d: Demand, nodes: int, age: Age) -> Aged:
    return age, Unit(uid, d.cluster.id, nodes, d.price, age[0]), d


def held_units(
    s: TickState, c: Cluster, nodes: Iterable[Node], served: dict[str, Age]
) -> list[Aged]:
    """Held nodes as the units they bid as once out of their window: a job's nodes as one gang
    at the job's price and age; a VM node at the cluster's live ceiling, with the age of the
    declared unit it serves (`served`); an idle Kubernetes node, serving no demand any more, at
    its lock, dated by its grant."""
    gangs: dict[str, list[Node]] = defaultdict(list)
    out = []
    for n in nodes:
        job = s.job_on(n)
        if job is not None:
            gangs[job.name].append(n)
        elif c.kind == "vm":
            out.append(
                _aged(f"n:{n.id}", Demand("held", c, [n], price=c.max_price or 0), 1, served[n.id])
            )
        else:
            d = Demand("idle", c, [n], price=n.locked_price or 0)
            out.append(_aged(f"n:{n.id}", d, 1, (n.granted_at or 0, 0)))
    for name, gang in sorted(gangs.items()):
        job = s.jobs[(c.id, name)]
        d = Demand("running", c, gang, job, job.price(c) or 0)
        out.append(_aged(f"r:{c.id}/{name}", d, len(gang), job.age))
    return out


def served_ages(s: TickState, c: Cluster, held: list[Node]) -> tuple[dict[str, Age], list[Age]]:
    """A VM cluster's declared units, oldest first: its `held` nodes serve the oldest (the
    oldest grant the oldest unit), replacements it is owed the next; the rest wait."""
    if c.kind != "vm":
        return {}, []
    ages = unit_ages(c.demand)
    ordered = sorted(held, key=lambda n: (n.granted_at or 0, n.idx))
    served = {
        n.id: ages[i] if i < len(ages) else (n.granted_at or 0, 0) for i, n in enumerate(ordered)
    }
    return served, ages[len(held) + s.owed_count(c.id) :]


def short_units(s: TickState, c: Cluster) -> list[Aged]:
    """Running jobs short of nodes out of service with no window left: the rest bids again."""
    out = []
    for job in s.jobs_of(c, "running"):
        missing = job.nodes - s.placed(job) - s.owed_to(job)
        if missing > 0:
            d = Demand("short", c, job=job, price=job.price(c) or 0)
            out.append(_aged(f"s:{c.id}/{job.name}", d, missing, job.age))
    return out


def new_vm_units(s: TickState, c: Cluster, waiting: list[Age]) -> list[Aged]:
    """Declared VM units no held node serves, as many as the spend limit leaves room for."""
    price = c.max_price or 0
    want = len(waiting)
    left = s.budget(c).left
    if left is not None and want:
        fit = max(0, left) // max(1, worst_case(price, s.g, grant_span("vm")))
        if fit < want:
            s.refused[c.id] = SPEND_LIMIT
            want = fit
    d = Demand("vm", c, price=price)
    return [_aged(f"v:{c.id}:{i:06d}", d, 1, age) for i, age in enumerate(waiting[:want])]


def new_job_units(s: TickState, c: Cluster) -> list[Aged]:
    """Pending jobs, oldest first, as far as the spend limit leaves room for their worst case
    (one that does not fit never holds back a younger one that does)."""
    out = []
    left = s.budget(c).left
    for job in s.jobs_of(c, "pending"):
        price = job.price(c) or 0
        nodes = job.nodes - len(s.credit.get((c.id, job.name), []))
        worst = worst_case(price, nodes * s.g, grant_span("k8s"))
        if left is not None and price >= s.r:
            if worst > left:
                s.refused[c.id] = SPEND_LIMIT
                continue
            left -= worst
        d = Demand("job", c, job=job, price=price)
        out.append(_aged(f"p:{c.id}/{job.name}", d, nodes, job.age))
    return out
