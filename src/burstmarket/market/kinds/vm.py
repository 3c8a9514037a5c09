"""VM capacity (docs/market.md "Demand", "Windows"): a declared number of whole nodes at a
ceiling price (`Cluster.max_gpus`, `max_price`, its `demand` as tranches). Each node is one unit
of that demand, and a held node serves one: it is never idle and runs no job."""

from __future__ import annotations

from burstmarket.errors import BidTooLow
from burstmarket.market.guard import worst_case
from burstmarket.market.kinds.base import Aged, Demand, DemandKind, TickView, unit
from burstmarket.market.model import SPEND_LIMIT, VM_WINDOW_NS, Age, Cluster, Node, unit_ages
from burstmarket.money import usd


class VmKind(DemandKind):
    window_ns = VM_WINDOW_NS
    hold_ns = None
    runs_jobs = False

    def declared_nodes(self, c: Cluster, gpus_per_node: int) -> int | None:
        return c.max_gpus // gpus_per_node

    def served_ages(
        self, s: TickView, c: Cluster, held: list[Node]
    ) -> tuple[dict[str, Age], list[Age]]:
        """The declared units, oldest first: `held` nodes serve the oldest (the oldest grant the
        oldest unit), replacements the cluster is owed the next; the rest wait."""
        ages = unit_ages(c.demand)
        ordered = sorted(held, key=lambda n: (n.granted_at or 0, n.idx))
        served = {
            n.id: ages[i] if i < len(ages) else (n.granted_at or 0, 0)
            for i, n in enumerate(ordered)
        }
        return served, ages[len(held) + s.owed_count(c.id) :]

    def lone_unit(self, s: TickView, c: Cluster, n: Node, served: dict[str, Age]) -> Aged:
        """At the cluster's live ceiling, with the age of the declared unit it serves."""
        return unit(f"n:{n.id}", Demand("held", c, [n], price=c.max_price or 0), 1, served[n.id])

    def new_units(self, s: TickView, c: Cluster, waiting: list[Age]) -> list[Aged]:
        """Declared units no held node serves, as many as the spend limit leaves room for."""
        price = c.max_price or 0
        want = len(waiting)
        left = s.budget(c).left
        if left is not None and want:
            fit = left // max(1, worst_case(price, s.gpus_per_node, self.grant_span_ns))
            if fit < want:
                s.refused[c.id] = SPEND_LIMIT
                want = fit
        d = Demand("declared", c, price=price)
        return [unit(f"v:{c.id}:{i:06d}", d, 1, age) for i, age in enumerate(waiting[:want])]

    def window_cap(self, s: TickView, c: Cluster, n: Node) -> int:
        """The bid that won the grant, lifted at once by a higher live ceiling."""
        return max(n.locked_price or 0, c.max_price or 0)

    def live_price(self, s: TickView, c: Cluster, n: Node) -> int:
        return c.max_price or n.locked_price or 0

    def pending_gpus(self, s: TickView, c: Cluster) -> int:
        return max(0, c.max_gpus - len(s.held(c.id)) * s.gpus_per_node)

    def too_low_refusal(self, s: TickView, c: Cluster) -> BidTooLow | None:
        """The cluster's standing ceiling, overtaken by the reserve."""
        price = c.max_price or 0
        return BidTooLow(
            f"{usd(price)} USD per GPU-hour is under the reserve price "
            f"{usd(s.reserve_price)}: the demand waits and lapsed nodes are reclaimed",
            cluster=c.id,
            price_per_gpu_hour=usd(price),
            reserve_price=usd(s.reserve_price),
        )


VM = VmKind()
