"""What a kind of demand is: the terms of its grants and the rules where kinds differ
(docs/market.md "Demand", "Windows"), as one `DemandKind`; and the auction units a kind's demand
becomes (`Demand`, `Aged`).

A kind sees the tick through `TickView`: the part of the tick's state (market/tick/tick_state.py,
`TickState`) its rules read, and `refused`, which they set. So the kinds import nothing of the
tick, which imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from burstmarket.auction import Unit
from burstmarket.errors import BidTooLow
from burstmarket.market.guard import Budget
from burstmarket.market.model import Age, Cluster, Job, JobKey, Node
from burstmarket.states import HeldBack, JobState


class TickView(Protocol):
    """What a kind's rules see of one tick's island (`TickState` is one)."""

    now: int
    gpus_per_node: int
    reserve_price: int
    refused: dict[str, HeldBack]
    """Cluster -> the refusal holding its demand back this tick (a kind sets spend-limit)."""
    left_out: dict[JobKey, int]
    """Pending job -> the worst case (ledger units) the spend limit had no room for this tick
    (a kind that runs jobs sets it, for the job's pending cause)."""
    credit: dict[JobKey, list[Node]]
    """Pending job -> idle block nodes that count toward it; it bids only for the rest."""

    def held(self, cluster: str) -> list[Node]: ...

    def job_on(self, n: Node) -> Job | None: ...

    def jobs_of(self, c: Cluster, state: JobState) -> list[Job]: ...

    def owed_count(self, cluster: str) -> int: ...

    def budget(self, c: Cluster) -> Budget: ...


@dataclass(slots=True)
class Demand:
    """What one auction unit stands for, to apply its outcome (market/tick/apply.py)."""

    stands_for: Literal["held", "idle", "running", "declared", "job", "short"]
    """Nodes held (a node serving declared demand, an idle node, a running gang) or wanted
    (declared units, a pending job, a running job's missing nodes)."""
    cluster: Cluster
    nodes: list[Node] = field(default_factory=list)
    job: Job | None = None
    price: int = 0


Aged = tuple[Age, Unit, Demand]
"""A unit with its age (the auction's tie order) and what it stands for."""


def unit(uid: str, d: Demand, nodes: int, age: Age) -> Aged:
    return age, Unit(uid, d.cluster.id, nodes, d.price, age[0]), d


class DemandKind(Protocol):
    """One kind of demand (`Cluster.kind`), looked up in the registry (`KINDS`, __init__.py).

    The tick's phases ask a cluster's kind where kinds differ, never its name: the terms of a
    fresh grant, the units its demand bids as, the cap and live price of a node it holds, what
    it leaves pending, its bid-too-low refusal. What is the same for every kind (a running job's
    gang, the spend guard's commitments, replacements, blocks) the tick does itself."""

    window_ns: int
    """A fresh grant's protection window."""
    hold_ns: int | None
    """A fresh grant's minimum hold (None: none). A node of a kind with one bills at least it
    when released, then whole increments (`Books.minimum_hold`), unless the market broke its
    window; a node under its window with no hold is one stepping down from a block's term."""
    runs_jobs: bool
    """Its demand is jobs run on its nodes: a node with no job is idle (released past its hold
    and the idle grace; the first a block takes), waiting jobs go on the capacity it holds
    first, and it may hold a base load block (with jobs smaller than one node packed on it).
    Otherwise a held node is the demand itself: never idle."""

    @property
    def grant_span_ns(self) -> int:
        """What a fresh grant commits (docs/market.md "Spend guard"): the longer of its window
        and its minimum hold."""
        return max(self.window_ns, self.hold_ns or 0)

    def declared_nodes(self, c: Cluster, gpus_per_node: int) -> int | None:
        """The nodes the cluster declared it wants (None: its demand is jobs, not a count)."""
        ...

    def served_ages(
        self, s: TickView, c: Cluster, held: list[Node]
    ) -> tuple[dict[str, Age], list[Age]]:
        """The age of the declared demand each `held` node serves (node id -> age), and the
        ages of the declared units no node serves or is owed, oldest first: those bid anew."""
        ...

    def lone_unit(self, s: TickView, c: Cluster, n: Node, served: dict[str, Age]) -> Aged:
        """The unit a held node with no job on it bids as once out of its window (`served`:
        from `served_ages`)."""
        ...

    def new_units(self, s: TickView, c: Cluster, waiting: list[Age]) -> list[Aged]:
        """New demand, as far as the spend limit leaves room for its worst case (where it does
        not, the kind sets `s.refused[c.id]` to spend-limit). `waiting`: from `served_ages`."""
        ...

    def window_cap(self, s: TickView, c: Cluster, n: Node) -> int:
        """The most held node `n` under an open window can be assessed per GPU-hour."""
        ...

    def live_price(self, s: TickView, c: Cluster, n: Node) -> int:
        """What the holder of market node `n` bids for it now (a renewal commits it; a block
        takes the cheapest first)."""
        ...

    def pending_gpus(self, s: TickView, c: Cluster) -> int:
        """The GPUs the cluster asks for and does not hold, after the tick."""
        ...

    def too_low_refusal(self, s: TickView, c: Cluster) -> BidTooLow | None:
        """The REFUSED line to log when the cluster's demand falls under the reserve (None: its
        jobs log their own, market/tick/verdicts.py)."""
        ...
