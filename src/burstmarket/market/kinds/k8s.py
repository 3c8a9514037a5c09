"""A Kubernetes cluster (docs/market.md "Demand", "Windows"): its demand is jobs, each a gang of
whole-node pods at the job's limit price, else the cluster's (`Cluster.limit_price`). A node it
holds runs a job or sits idle; a grant carries a minimum hold."""

from __future__ import annotations

from burstmarket.errors import BidTooLow
from burstmarket.market.guard import worst_case
from burstmarket.market.kinds.base import Aged, Demand, DemandKind, TickView, unit
from burstmarket.market.model import K8S_HOLD_NS, K8S_WINDOW_NS, SPEND_LIMIT, Age, Cluster, Node


class KubernetesKind(DemandKind):
    window_ns = K8S_WINDOW_NS
    hold_ns = K8S_HOLD_NS
    runs_jobs = True

    def declared_nodes(self, c: Cluster, gpus_per_node: int) -> int | None:
        return None

    def served_ages(
        self, s: TickView, c: Cluster, held: list[Node]
    ) -> tuple[dict[str, Age], list[Age]]:
        """No declared units: a node serves a job (its gang bids with the job's age) or none."""
        return {}, []

    def lone_unit(self, s: TickView, c: Cluster, n: Node, served: dict[str, Age]) -> Aged:
        """An idle node, serving no demand any more: at its lock, dated by its grant."""
        d = Demand("idle", c, [n], price=n.locked_price or 0)
        return unit(f"n:{n.id}", d, 1, (n.granted_at or 0, 0))

    def new_units(self, s: TickView, c: Cluster, waiting: list[Age]) -> list[Aged]:
        """Pending jobs, oldest first, as far as the spend limit leaves room for their worst case
        (one that does not fit never holds back a younger one that does; one under the reserve
        never clears, so it commits nothing)."""
        out = []
        left = s.budget(c).left
        for job in s.jobs_of(c, "pending"):
            price = job.price(c) or 0
            nodes = job.nodes - len(s.credit.get((c.id, job.name), []))
            worst = worst_case(price, nodes * s.gpus_per_node, self.grant_span_ns)
            if left is not None and price >= s.reserve_price:
                if worst > left:
                    s.refused[c.id] = SPEND_LIMIT
                    s.left_out[(c.id, job.name)] = worst
                    continue
                left -= worst
            d = Demand("job", c, job=job, price=price)
            out.append(unit(f"p:{c.id}/{job.name}", d, nodes, job.age))
        return out

    def window_cap(self, s: TickView, c: Cluster, n: Node) -> int:
        """The live limit price of the job on it (one under the reserve, as after a step-down,
        keeps the lock); an idle node its lock."""
        locked = n.locked_price or 0
        job = s.job_on(n)
        if job is None or job.state != "running":
            return locked
        price = job.price(c) or 0
        return price if price >= s.reserve_price else (locked or price)

    def live_price(self, s: TickView, c: Cluster, n: Node) -> int:
        job = s.job_on(n)
        return (job.price(c) if job else None) or n.locked_price or 0

    def pending_gpus(self, s: TickView, c: Cluster) -> int:
        """The nodes of its pending jobs, but those its block's idle nodes count toward."""
        pending = 0
        for j in s.jobs_of(c, "pending"):
            credit = len(s.credit.get((c.id, j.name), []))
            pending += (j.nodes - credit) * s.gpus_per_node
        return pending

    def too_low_refusal(self, s: TickView, c: Cluster) -> BidTooLow | None:
        return None


KUBERNETES = KubernetesKind()
