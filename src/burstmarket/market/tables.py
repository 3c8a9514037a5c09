"""The market's store, table by table: one definition each (store/table.py), from which come the
check that the migrations built exactly these tables, each batch's Arrow schema, and the
mapping between the rows and the dataclasses the market works on.

State tables (islands, accounts, clusters, nodes, jobs, job events, base load blocks) hold
integer µUSD prices and integer ns times; the ledger holds exact HUGEINT ledger units; the
market-data tables a tick appends (ticks, cluster rates, allocations, ladder, verdicts) hold
TIMESTAMPTZ times and DECIMAL(18,6) USD, as the feed and the Parquet history read them
(sql/schema_*.sql says why each column exists).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from burstmarket.market.ledger import Entry
from burstmarket.market.model import (
    Block,
    Cluster,
    Island,
    Job,
    JobEvent,
    Node,
    Offer,
    PendingDetail,
)
from burstmarket.market.receipts import Receipt
from burstmarket.states import AllocationKind, PendingReason
from burstmarket.store.table import (
    BIGINT,
    BOOLEAN,
    HUGEINT,
    INTEGER,
    TIMESTAMPTZ,
    VARCHAR,
    Column,
    SqlType,
    Table,
    decimal,
    struct,
    struct_list,
)

USD: Final = decimal(18, 6)
"""USD (per GPU-hour for a price), exact to the µUSD: the market-data tables' money."""
SECONDS: Final = decimal(12, 3)
"""A duration of market time, exact to the ms."""
TRANCHES: Final = struct_list(nodes=INTEGER, since=BIGINT, seq=BIGINT)
"""A VM cluster's declared units, oldest first (model.Tranche)."""
LATER_PRICES: Final = struct_list(since=TIMESTAMPTZ, price=USD)
"""A ladder rung's prices over time: from `since` on, `price` (USD per GPU-hour)."""
PENDING_DETAIL: Final = struct(**{name: BIGINT for name in PendingDetail._fields})
"""The figures of why demand waits (model.PendingDetail), each member NULL unless its cause
sets it."""
LEVELS: Final = struct_list(price=BIGINT, nodes=INTEGER)
"""Other clusters' demand as price levels (µUSD per GPU-hour) × nodes (market/receipts.py)."""


def _own(name: str, kind: SqlType) -> Column:
    """A column of the store's own: written and read by named SQL, never by the row type."""
    return Column(name, kind, unmapped=True)


# --- the market's state -------------------------------------------------------------------

ISLANDS: Final = Table(
    "islands",
    Island,
    [
        Column("id", VARCHAR),
        Column("gpus_per_node", INTEGER),
        Column("nodes", INTEGER),
        Column("reserve_price", BIGINT),
        Column("node_spec", VARCHAR, null=True),
        _own("created_at", BIGINT),
        Column("base_load_cap", INTEGER),
        Column("buying_open", BOOLEAN),
    ],
    key=["id"],
)
ISLAND_TERMS: Final = (
    "gpus_per_node",
    "nodes",
    "reserve_price",
    "node_spec",
    "base_load_cap",
    "buying_open",
)
"""What the operator may change of an island."""

OFFERS: Final = Table(
    "base_load_offers",
    Offer,
    [
        Column("island", VARCHAR),
        Column("size_gpus", INTEGER),
        Column("term_hours", INTEGER),
        Column("rate", BIGINT, null=True),
    ],
    key=["island", "size_gpus", "term_hours"],
)

ACCOUNTS: Final[Table[Any]] = Table(
    "accounts", None, [_own("name", VARCHAR), _own("created_at", BIGINT)]
)

CLUSTERS: Final = Table(
    "clusters",
    Cluster,
    [
        Column("id", VARCHAR),
        Column("account", VARCHAR),
        Column("island", VARCHAR),
        Column("kind", VARCHAR),
        _own("token_hash", VARCHAR),
        _own("created_at", BIGINT),
        Column("max_gpus", INTEGER),
        Column("max_price", BIGINT, null=True),
        Column("limit_price", BIGINT, null=True),
        Column("spend_limit", BIGINT, null=True),
        Column("spend_window_start", BIGINT, null=True),
        Column("pending_reason", VARCHAR, null=True),
        Column("demand", TRANCHES),
        Column("bid_too_low", BOOLEAN),
        Column("packing", BOOLEAN),
        Column("pending_detail", PENDING_DETAIL, null=True),
    ],
    key=["id"],
)
CLUSTER_DEMAND: Final = ("max_gpus", "max_price", "demand")
"""What a VM declaration writes of its cluster (a tick never writes these)."""
CLUSTER_STATE: Final = ("spend_window_start", "pending_reason", "pending_detail", "bid_too_low")
"""What a tick writes of a cluster (a declaration never writes these)."""

NODES: Final = Table(
    "nodes",
    Node,
    [
        Column("island", VARCHAR),
        Column("id", VARCHAR),
        Column("idx", INTEGER),
        Column("cluster", VARCHAR, null=True),
        Column("job", VARCHAR, null=True),
        Column("granted_at", BIGINT, null=True),
        Column("window_ends_at", BIGINT, null=True),
        Column("hold_until", BIGINT, null=True),
        Column("idle_since", BIGINT, null=True),
        Column("locked_price", BIGINT, null=True),
        Column("commit_price", BIGINT, null=True),
        Column("commit_ends_at", BIGINT, null=True),
        Column("service", VARCHAR, null=True),
        Column("owed_until", BIGINT, null=True),
        Column("block", VARCHAR, null=True),
        Column("billed_until", BIGINT, null=True),
    ],
    key=["island", "id"],
)
NODE_STATE: Final = tuple(c.name for c in NODES.columns if c.name not in ("island", "id", "idx"))
"""Everything a node's holder, job, windows, commitment and service are (never its place)."""

JOBS: Final = Table(
    "jobs",
    Job,
    [
        Column("cluster", VARCHAR),
        Column("name", VARCHAR),
        Column("nodes", INTEGER),
        Column("priority_class", VARCHAR, null=True),
        Column("limit_price", BIGINT, null=True),
        Column("state", VARCHAR),
        Column("created_at", BIGINT),
        Column("provisioned_at", BIGINT, null=True),
        Column("gang_price", BIGINT, null=True),
        Column("finished_at", BIGINT, null=True),
        Column("bid_too_low", BOOLEAN),
        Column("seq", BIGINT),
        Column("pods", INTEGER, null=True),
        Column("gpus_per_pod", INTEGER, null=True),
        Column("node", VARCHAR, null=True),
        Column("reason", VARCHAR, null=True),
        Column("pending_reason", VARCHAR, null=True),
        Column("pending_detail", PENDING_DETAIL, null=True),
    ],
    key=["cluster", "name"],
)
JOB_PROGRESS: Final = (
    "state",
    "provisioned_at",
    "gang_price",
    "bid_too_low",
    "node",
    "reason",
    "created_at",
    "pending_reason",
    "pending_detail",
)
"""What a tick writes of a job (its terms are the tenant's; `created_at` moves only when a job
smaller than one node is requeued as a new request at the end of its block)."""

JOB_EVENTS: Final = Table(
    "job_events",
    JobEvent,
    [
        Column("cluster", VARCHAR),
        Column("job", VARCHAR),
        Column("ts", BIGINT, field="at"),
        Column("type", VARCHAR),
        Column("detail", VARCHAR),
    ],
)

BLOCKS: Final = Table(
    "base_load_blocks",
    Block,
    [
        Column("id", VARCHAR),
        Column("cluster", VARCHAR),
        Column("island", VARCHAR),
        Column("nodes", INTEGER),
        Column("rate", BIGINT),
        Column("starts_at", BIGINT),
        Column("ends_at", BIGINT),
        Column("state", VARCHAR),
        Column("ended_at", BIGINT, null=True),
        Column("billed_until", BIGINT),
        Column("negative_since", BIGINT, null=True),
        Column("origin", VARCHAR),
        Column("purchase", VARCHAR),
        Column("owed_by", BIGINT, null=True),
        Column("notes", VARCHAR, null=True),
    ],
    key=["id"],
)
BLOCK_PROGRESS: Final = ("state", "ended_at", "billed_until", "negative_since")
"""What a tick writes of a block (its terms are the operator's)."""
BLOCK_TERMS: Final = ("ends_at", "notes", "billed_until")
"""What a change of the end date or the notes writes of a live block, in place (a shorter
term takes back the steps billed beyond it)."""

LEDGER: Final = Table(
    "ledger",
    Entry,
    [
        _own("id", BIGINT),
        Column("ts", BIGINT, field="at"),
        Column("account", VARCHAR),
        Column("cluster", VARCHAR, null=True),
        Column("island", VARCHAR, null=True),
        Column("tick", BIGINT, null=True),
        Column("kind", VARCHAR),
        Column("node", VARCHAR, null=True),
        Column("period_start", BIGINT, null=True),
        Column("period_end", BIGINT, null=True),
        Column("gpus", INTEGER),
        Column("gpu_ms", BIGINT),
        Column("rate", BIGINT, null=True),
        Column("units", HUGEINT),
        Column("block", VARCHAR, null=True),
    ],
)


# --- the market data a tick appends -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TickRow:
    island: str
    tick: int
    time: datetime
    vwap: Decimal | None
    min: Decimal | None
    max: Decimal | None
    gpus: int
    clusters: int
    pending_gpus: int
    reserve_price: Decimal
    tick_seconds: Decimal
    core_rounds: int
    core_exact: bool


@dataclass(frozen=True, slots=True)
class ClusterRateRow:
    island: str
    tick: int
    time: datetime
    cluster: str
    gpus: int
    rate: Decimal
    amount_usd: Decimal


@dataclass(frozen=True, slots=True)
class AllocationRow:
    island: str
    tick: int
    time: datetime
    cluster: str
    node: str
    kind: AllocationKind


@dataclass(frozen=True, slots=True)
class LadderRow:
    island: str
    tick: int
    time: datetime
    nodes: int
    gpus: int
    price: Decimal
    contestable_at: datetime | None
    later: list[dict[str, Any]]
    """`{since, price}` items (LATER_PRICES)."""


@dataclass(frozen=True, slots=True)
class VerdictRow:
    island: str
    tick: int
    cluster: str
    verdict: str


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A cluster whose demand waits after a tick: the GPUs, and why (its row keeps only the
    latest cause; these keep every tick's)."""

    island: str
    tick: int
    cluster: str
    gpus: int
    pending_reason: PendingReason | None
    pending_detail: PendingDetail | None


_TICK = [Column("island", VARCHAR), Column("tick", BIGINT), Column("time", TIMESTAMPTZ)]

TICKS: Final = Table(
    "ticks",
    TickRow,
    [
        *_TICK,
        Column("vwap", USD, null=True),
        Column("min", USD, null=True),
        Column("max", USD, null=True),
        Column("gpus", INTEGER),
        Column("clusters", INTEGER),
        Column("pending_gpus", INTEGER),
        Column("reserve_price", USD),
        # nullable as schema 4 added it; every tick writes it
        Column("tick_seconds", SECONDS, null=True),
        # nullable as schema 5 added them (how the core was reached); every tick writes them
        Column("core_rounds", INTEGER, null=True),
        Column("core_exact", BOOLEAN, null=True),
    ],
)

CLUSTER_RATES: Final = Table(
    "cluster_rates",
    ClusterRateRow,
    [
        *_TICK,
        Column("cluster", VARCHAR),
        Column("gpus", INTEGER),
        Column("rate", USD),
        Column("amount_usd", USD),
    ],
)

ALLOCATIONS: Final = Table(
    "allocations",
    AllocationRow,
    [*_TICK, Column("cluster", VARCHAR), Column("node", VARCHAR), Column("kind", VARCHAR)],
)

LADDER: Final = Table(
    "ladder",
    LadderRow,
    [
        *_TICK,
        Column("nodes", INTEGER),
        Column("gpus", INTEGER),
        Column("price", USD),
        Column("contestable_at", TIMESTAMPTZ, null=True),
        Column("later", LATER_PRICES),
    ],
)

VERDICTS: Final = Table(
    "verdicts",
    VerdictRow,
    [
        Column("island", VARCHAR),
        Column("tick", BIGINT),
        Column("cluster", VARCHAR),
        Column("verdict", VARCHAR),
    ],
)

PENDING: Final = Table(
    "pending",
    PendingRow,
    [
        Column("island", VARCHAR),
        Column("tick", BIGINT),
        Column("cluster", VARCHAR),
        Column("gpus", INTEGER),
        Column("pending_reason", VARCHAR, null=True),
        Column("pending_detail", PENDING_DETAIL, null=True),
    ],
)

RECEIPTS: Final = Table(
    "receipts",
    Receipt,
    [
        *_TICK,
        Column("cluster", VARCHAR),
        Column("nodes", INTEGER),
        Column("gpus", INTEGER),
        Column("rate", USD),
        Column("amount", HUGEINT),
        Column("reserve", HUGEINT),
        Column("displaced", HUGEINT),
        Column("core", HUGEINT),
        Column("protected", HUGEINT),
        Column("displaced_levels", LEVELS),
        Column("coalition", LEVELS, null=True),
        Column("coalition_value", BIGINT, null=True),
        Column("protected_levels", LEVELS),
        Column("capped", BOOLEAN),
    ],
)

# --- the record: what each tick's auctions used, the islands as the ticks ran them ---------


@dataclass(frozen=True, slots=True)
class BidRow:
    """One part of one of a tick's auctions (market/auction_record.py; docs/history-tables.md
    `bids` says what each part's columns hold)."""

    island: str
    tick: int
    time: datetime
    auction: str
    part: str
    cluster: str | None
    unit: str | None
    nodes: int
    price: Decimal | None
    age: int | None
    ends_at: datetime | None
    locked_by_clearing: bool | None
    gpus_per_node: int | None


BIDS: Final = Table(
    "bids",
    BidRow,
    [
        *_TICK,
        Column("auction", VARCHAR),
        Column("part", VARCHAR),
        Column("cluster", VARCHAR, null=True),
        Column("unit", VARCHAR, null=True),
        Column("nodes", INTEGER),
        Column("price", USD, null=True),
        Column("age", INTEGER, null=True),
        Column("ends_at", TIMESTAMPTZ, null=True),
        Column("locked_by_clearing", BOOLEAN, null=True),
        Column("gpus_per_node", INTEGER, null=True),
    ],
)

ISLAND_TERMS_RECORD: Final[Table[Any]] = Table(
    "island_terms",
    None,
    [
        _own("island", VARCHAR),
        _own("tick", BIGINT),
        _own("time", TIMESTAMPTZ),
        _own("gpus_per_node", INTEGER),
        _own("nodes", INTEGER),
        Column("node_spec", VARCHAR, null=True, unmapped=True),
        _own("reserve_price", USD),
    ],
)
"""The island's terms from the first tick that ran on them (sql/record_island_terms.sql)."""

DEMAND: Final[Table[Any]] = Table(
    "demand",
    None,
    [
        _own("seq", BIGINT),
        _own("time", TIMESTAMPTZ),
        Column("island", VARCHAR, null=True, unmapped=True),
        Column("cluster", VARCHAR, null=True, unmapped=True),
        _own("method", VARCHAR),
        _own("path", VARCHAR),
        _own("body", VARCHAR),
    ],
)
"""The demand journal (store/journal.py): read and written by named SQL only."""

TABLES: Final = (
    ISLANDS,
    OFFERS,
    ACCOUNTS,
    CLUSTERS,
    NODES,
    JOBS,
    JOB_EVENTS,
    BLOCKS,
    LEDGER,
    TICKS,
    CLUSTER_RATES,
    ALLOCATIONS,
    LADDER,
    VERDICTS,
    RECEIPTS,
    PENDING,
    BIDS,
    ISLAND_TERMS_RECORD,
    DEMAND,
)
"""Every table of the market's store (the migrations' schema_version aside)."""
