"""What a tick reads and what it gives back (the service reads the one from the store and writes
the other in one transaction)."""

from __future__ import annotations

from dataclasses import dataclass, field

from burstmarket.auction import Clearing, IslandInput, Release
from burstmarket.market.ladder import LadderRung
from burstmarket.market.ledger import Billed, Entry, PurchaseMoney
from burstmarket.market.model import Block, Cluster, Island, Job, JobEvent, Node, PendingDetail
from burstmarket.market.own_ladder import OwnRung
from burstmarket.market.receipts import Receipt
from burstmarket.states import AllocationKind, PendingReason


@dataclass(slots=True)
class TickInput:
    island: Island
    tick: int
    time: int
    interval_ns: int
    clusters: dict[str, Cluster]
    nodes: list[Node]
    """Every node of the island, in index order."""
    jobs: list[Job]
    """Pending and running jobs of the island's clusters."""
    balances: dict[str, int]
    """Account -> credit left in ledger units (at or below zero: billing hold)."""
    spent: dict[str, int]
    """Cluster (with a spend limit) -> billed units in its open spend window."""
    rates: dict[str, int]
    """Cluster -> its rate at the previous tick (µUSD per GPU-hour)."""
    blocks: list[Block] = field(default_factory=list)
    """The island's live base load blocks."""
    purchases: dict[str, PurchaseMoney] = field(default_factory=dict)
    """The deposit held and the receivable owed of each live block's purchase (by its id):
    given back, and closed, when the block stops."""
    billed: Billed | None = None
    """How far the island's market billing has gone (None: never billed)."""
    hold_since: dict[str, int] = field(default_factory=dict)
    """Account at or below zero whose billing hold starts -> since when it is (market ns)."""


# --- the record of a tick's auctions: the history's `bids` (docs/history.md "The record") ---


@dataclass(frozen=True, slots=True)
class StepDown:
    """Nodes of one cluster stepping down from a base load block under their window, fixed
    outside the auction at one lock (tick/clearing.py `with_step_downs`)."""

    cluster: str
    nodes: int
    locked_price: int
    """µUSD per GPU-hour."""
    locked_by_clearing: bool
    """They had no price locked: the tick locked them at the lowest rate its auction cleared at
    (tick/block_terms.py `clearing_lock`)."""


@dataclass(frozen=True, slots=True)
class AuctionRecord:
    """One auction of a tick as the history keeps it, enough for the engine to run it again:
    its input, the step-downs fixed beside it, and (for the auction the ladders price) the
    window releases the published ladder's later rungs come from."""

    auction: IslandInput
    step_downs: tuple[StepDown, ...] = ()
    releases: tuple[Release, ...] = ()


@dataclass(slots=True)
class TickOutput:
    clearing: Clearing
    ladder: tuple[LadderRung, ...]
    """The published ladder: the engine's rungs, then those windows hold (market/ladder.py)."""
    nodes: list[Node]
    jobs: list[Job]
    clusters: list[Cluster]
    events: list[JobEvent]
    ledger: list[Entry]
    rates: dict[str, int]
    allocations: list[tuple[str, str, AllocationKind]]
    """(cluster, node, kind) for every held node after the tick."""
    pending_gpus: int
    pending: dict[str, int]
    """Cluster -> the GPUs it asks for and does not hold after the tick (every cluster)."""
    holders_before: dict[str, str | None]
    """Node -> the cluster that held it before the tick, for every node the tick moved between
    holders (the grants and reclaims of each cluster's own feed channel)."""
    verdicts: list[tuple[str, str]]
    """(cluster, verdict): bid-too-low, spend-limit or billing-hold."""
    blocks: list[Block] = field(default_factory=list)
    """Blocks whose row changed: billing progress, end of term, cancellation."""
    own_ladders: dict[str, tuple[OwnRung, ...]] = field(default_factory=dict)
    """Cluster -> its own ladder (market/own_ladder.py), for every cluster of the island."""
    newcomer_ladders: dict[str, tuple[OwnRung, ...]] = field(default_factory=dict)
    """Kind -> the own ladder of a cluster of that kind made since the tick."""
    receipts: list[Receipt] = field(default_factory=list)
    """Why each cluster holding market nodes pays its rate (market/receipts.py)."""
    waiting: list[tuple[str, int, PendingReason | None, PendingDetail | None]] = field(
        default_factory=list
    )
    """(cluster, GPUs pending, cause, its figures) for every cluster whose demand waits after
    the tick (pending GPUs or a cause), by cluster id."""
    bids: AuctionRecord | None = None
    """The auction the tick cleared, with its step-downs (None only before `run_tick` sets
    it)."""
    next_bids: AuctionRecord | None = None
    """The auction the ladders were priced on (`next_bids`), with its window releases."""
