"""The market's state as plain rows (mapped to the store's tables in market/tables.py) and its
fixed durations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NamedTuple

from burstmarket.clock import NS_PER_HOUR, NS_PER_S
from burstmarket.states import BlockState, JobState, Kind, OutOfService, PendingReason

VM_WINDOW_NS = NS_PER_HOUR
K8S_WINDOW_NS = 2 * NS_PER_HOUR
K8S_HOLD_NS = NS_PER_HOUR
"""Kubernetes nodes bill at least one hour from the grant..."""
K8S_INCREMENT_NS = 300 * NS_PER_S
"""...and after it in whole 5-minute increments."""
IDLE_GRACE_NS = 300 * NS_PER_S
BASE_LOAD_STEP_NS = 300 * NS_PER_S
"""A base load block bills its whole block in 5-minute steps, each as it starts."""
BASE_LOAD_GRACE_NS = 24 * NS_PER_HOUR
"""A balance at or below zero for this long cancels a live block."""
SPEND_WINDOW_NS = 24 * NS_PER_HOUR
RENEWAL_NS = NS_PER_HOUR
"""A node kept past its commitment commits one more hour's worst case at a time."""

# the states by name (states.py); Final keeps each its Literal type
SPEND_LIMIT: Final = "spend-limit"
BILLING_HOLD: Final = "billing-hold"
CORDONED: Final = "cordoned"
DARK: Final = "dark"
LIVE: Final = "live"
ENDED: Final = "ended"
CANCELLED: Final = "cancelled"
CHANGED: Final = "changed"
"""Ended by a change of rate or size, continued by a new block from that instant."""

# how a block came to be
PURCHASE: Final = "purchase"
"""Bought by the tenant at a posted cell of its island's offer grid."""
ACCOUNT_TEAM: Final = "account-team"
"""Made by the operator directly: any size, term and rate within the island's cap."""

# why a job smaller than one node waits (docs/market.md "Small jobs on the block")
RESERVED_TOO_SMALL: Final = "ReservedTooSmall"
"""Its pods are each smaller than a node and together more than one: it is never placed."""
RESERVED_BUSY: Final = "ReservedBusy"
"""No live block, or none of the block's GPUs it may take are free."""
PACKING_DISABLED: Final = "PackingDisabled"
"""Packing onto the block is not enabled for the cluster."""

# why demand waits in the market (docs/market.md "Why it waits"), beside the two refusals
BID_TOO_LOW: Final = "bid-too-low"
NO_SUPPLY: Final = "no-supply"
"""More nodes than the island has in service outside base load blocks."""
WINDOWS: Final = "windows"
"""The price to win is within the ceiling once protection windows let the nodes go."""
OUTBID: Final = "outbid"
"""The price to win is above the ceiling."""

PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
    "high": 1000,
    "normal": 0,
    "default": 0,
    "low": -1000,
}
"""Waiting jobs are placed on capacity the cluster already has (its block, its idle nodes) in
this order, highest first; no class or a name not listed ranks as Kubernetes' default, 0."""


def priority(priority_class: str | None) -> int:
    return PRIORITY_CLASSES.get(priority_class or "", 0)


Age = tuple[int, int]
"""(since, seq): when a demand was first declared, then the order the market accepted it in
(docs/market.md "Demand"). Smaller is older; older demand wins ties."""

JobKey = tuple[str, str]
"""(cluster, job name)."""


class Tranche(NamedTuple):
    """`nodes` VM units first declared at `since`, accepted as the `seq`-th write of demand."""

    nodes: int
    since: int
    seq: int


def unit_ages(demand: list[Tranche]) -> list[Age]:
    """The age of every declared VM unit, oldest first."""
    return [(t.since, t.seq) for t in demand for _ in range(t.nodes)]


class PendingDetail(NamedTuple):
    """The figures of why demand waits (docs/market.md "Why it waits"), as the tick found them:
    each cause sets its own and leaves the rest None. Money in µUSD (per GPU-hour for a price),
    times in market ns."""

    since: int | None = None
    """billing-hold: since when the account's balance is at or below zero."""
    balance: int | None = None
    """billing-hold: the account's balance."""
    spend_left: int | None = None
    """spend-limit: what is left of the limit in its window (never negative)."""
    worst_case: int | None = None
    """spend-limit: the worst case of the demand that does not fit."""
    ceiling: int | None = None
    """The price the demand bids (None under bid-too-low: a job with no limit price)."""
    reserve: int | None = None
    """bid-too-low: the island's reserve price."""
    nodes: int | None = None
    """no-supply, windows, outbid: the nodes the demand waits for."""
    market_nodes: int | None = None
    """no-supply: the island's nodes in service outside base load blocks."""
    contestable_at: int | None = None
    """windows (outbid, when windows hold the nodes too): when they can be won."""
    price: int | None = None
    """windows: the price to win then; outbid: the price to win, above the ceiling."""
    gpus: int | None = None
    """The small-job reasons: the GPUs the job asks for."""

    @classmethod
    def stored(cls, value: PendingDetail | dict[str, int | None] | None) -> PendingDetail | None:
        """The detail as the store gives it (a struct reads as a dict)."""
        return cls(**value) if isinstance(value, dict) else value


def resized(demand: list[Tranche], nodes: int, since: int, seq: int) -> list[Tranche]:
    """The tranches of a declaration of `nodes` units: growing dates only the added units
    (`since`, `seq`); lowering drops the youngest units first."""
    kept: list[Tranche] = []
    left = nodes
    for t in demand:
        if left <= 0:
            break
        kept.append(t._replace(nodes=min(t.nodes, left)))
        left -= t.nodes
    if left > 0:
        kept.append(Tranche(left, since, seq))
    return kept


@dataclass(slots=True)
class Island:
    id: str
    gpus_per_node: int
    nodes: int
    reserve_price: int
    node_spec: str | None
    base_load_cap: int = 0
    """How many nodes base load blocks may reserve on the island."""
    buying_open: bool = False
    """Tenants may buy the island's posted cells themselves."""


@dataclass(slots=True)
class Cluster:
    id: str
    account: str
    island: str
    kind: Kind
    max_gpus: int
    max_price: int | None
    demand: list[Tranche]
    """VM units as tranches, oldest first (their nodes add up to max_gpus / gpus_per_node)."""
    limit_price: int | None
    spend_limit: int | None
    spend_window_start: int | None
    pending_reason: PendingReason | None
    bid_too_low: bool = False
    """The cluster's bid-too-low verdict at its island's last tick."""
    packing: bool = False
    """Jobs smaller than one node may be packed onto the cluster's base load block."""
    pending_detail: PendingDetail | None = None
    """The figures of `pending_reason`, from the same tick."""

    def __post_init__(self) -> None:
        # the store gives tranches and the detail as dicts (structs)
        self.demand = [t if isinstance(t, Tranche) else Tranche(**t) for t in self.demand]
        self.pending_detail = PendingDetail.stored(self.pending_detail)


@dataclass(slots=True)
class Node:
    island: str
    id: str
    idx: int
    cluster: str | None
    job: str | None
    granted_at: int | None
    window_ends_at: int | None
    hold_until: int | None
    idle_since: int | None
    locked_price: int | None
    commit_price: int | None
    commit_ends_at: int | None
    service: OutOfService | None = None
    """None in service, else cordoned or dark: out of service, kept by its cluster, unbilled."""
    owed_until: int | None = None
    """Out of service inside a window: the cluster is owed a replacement until then."""
    block: str | None = None
    """The base load block holding the node."""
    billed_until: int | None = None
    """Set while a market node's billing is out of step with its island's (back from an
    uncordon): billing resumes from it. None: billed as far as the island's last tick billed."""

    def window_open(self, now: int) -> bool:
        return self.window_ends_at is not None and self.window_ends_at > now

    def owed(self, now: int) -> bool:
        return self.owed_until is not None and self.owed_until > now

    def idle_release_at(self, reserve: int) -> int:
        """When an idle Kubernetes node goes: past its minimum hold and its idle grace, or at
        once if its locked price could never clear (the grace holds capacity only at a price
        that clears)."""
        assert self.idle_since is not None
        if self.locked_price is None or self.locked_price < reserve:
            return self.idle_since
        return max(self.hold_until or 0, self.idle_since + IDLE_GRACE_NS)

    def free(self) -> None:
        """Back to the island (an out-of-service node stays out of service)."""
        self.cluster = self.job = self.block = self.owed_until = None
        self.granted_at = self.window_ends_at = self.hold_until = self.idle_since = None
        self.locked_price = self.commit_price = self.commit_ends_at = self.billed_until = None


def newest_first(nodes: list[Node]) -> list[Node]:
    """The order a scale-down gives nodes back in: the latest grant first."""
    return sorted(nodes, key=lambda n: (-(n.granted_at or 0), -n.idx))


@dataclass(slots=True)
class Job:
    cluster: str
    name: str
    nodes: int
    priority_class: str | None
    limit_price: int | None
    state: JobState
    created_at: int
    provisioned_at: int | None
    gang_price: int | None
    finished_at: int | None
    bid_too_low: bool
    seq: int = 0
    """The order the market accepted the job in (ties of equal `created_at`)."""
    pods: int | None = None
    gpus_per_pod: int | None = None
    """Set for a job of pods smaller than one node (`nodes` is then 0): it is placed on the
    cluster's base load block by GPU count, never in the market."""
    node: str | None = None
    """The block node a job smaller than one node runs on."""
    reason: str | None = None
    """Why a job smaller than one node waits (RESERVED_TOO_SMALL, ...)."""
    pending_reason: PendingReason | None = None
    """Why the pending job waits, as of its island's last tick (docs/market.md "Why it
    waits")."""
    pending_detail: PendingDetail | None = None

    def __post_init__(self) -> None:
        self.pending_detail = PendingDetail.stored(self.pending_detail)

    @property
    def age(self) -> Age:
        return (self.created_at, self.seq)

    @property
    def small(self) -> bool:
        """Its pods are each smaller than one node."""
        return self.gpus_per_pod is not None

    @property
    def gpus(self) -> int:
        """GPUs of a job smaller than one node, all its pods together."""
        return (self.pods or 0) * (self.gpus_per_pod or 0)

    def price(self, cluster: Cluster) -> int | None:
        """The job's own limit price, else the cluster's (None bids nothing)."""
        return self.limit_price if self.limit_price is not None else cluster.limit_price


@dataclass(slots=True)
class Block:
    """A base load block: `nodes` fixed nodes for [starts_at, ends_at) at `rate` µUSD per
    GPU-hour, billed in 5-minute steps up to `billed_until`."""

    id: str
    cluster: str
    island: str
    nodes: int
    rate: int
    starts_at: int
    ends_at: int
    state: BlockState
    ended_at: int | None
    billed_until: int
    negative_since: int | None
    origin: str = ACCOUNT_TEAM
    purchase: str = ""
    """The block whose security deposit and receivable this one carries: itself, or the block
    a change of rate or size continued."""
    owed_by: int | None = None
    """The purchase's receivable is due before this time (None: nothing was owed by wire)."""
    notes: str | None = None

    def steps(self, until: int) -> list[tuple[int, int]]:
        """The 5-minute steps not billed yet that start before `until` (within the term), each
        [start, end); `billed_until` moves past them."""
        spans = []
        while self.billed_until < min(until, self.ends_at):
            start = self.billed_until
            self.billed_until = min(start + BASE_LOAD_STEP_NS, self.ends_at)
            spans.append((start, self.billed_until))
        return spans


@dataclass(frozen=True, slots=True)
class Offer:
    """A cell of an island's posted offer grid: `size_gpus` (whole nodes) for `term_hours` at
    `rate` µUSD per GPU-hour; None: posted without a rate (sold out)."""

    island: str
    size_gpus: int
    term_hours: int
    rate: int | None


@dataclass(frozen=True, slots=True)
class JobEvent:
    cluster: str
    job: str
    at: int
    type: str
    detail: str
