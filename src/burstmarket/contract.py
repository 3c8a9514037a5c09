"""The HTTP API's contract in types: every request body and every answer, as msgspec Structs.

The handlers (api/) declare them, so the OpenAPI document lists each body and answer from
these very types; the market (market/) builds the answers, so what it returns is what goes on
the wire, field for field (docs/api.md). Nothing here imports the API or the market.

Request bodies are decoded strictly (api/bodies.py): an unknown field, a wrong type or a value
past a limit written here (`msgspec.Meta`: a length, a count above 0, a string without control
characters) is refused `invalid` naming the field. The OpenAPI document (apidoc.py) is written
from these same declarations, so what it says a body may be is what the server takes. Money in a
body is read as a Decimal from the JSON text, digit for digit, and checked on the price grid
(money.py) where it is turned into integer micro-dollars, never rounded. Money in an answer is
a JSON number in USD: prices and rates per GPU-hour with at most 4 decimals, amounts at most 6.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

import msgspec

from burstmarket.states import (
    BillingKind,
    BlockOrigin,
    BlockState,
    JobState,
    Kind,
    LadderReason,
    NodeState,
    OfferState,
    PendingReason,
)

# --- limits (docs/api.md "Limits") ----------------------------------------------------------

MAX_NAME = 63
"""Names: jobs, accounts, clusters, islands (1-63 lowercase letters, digits or '-')."""
MAX_PRIORITY_CLASS = 253
"""A Kubernetes PriorityClass name is a DNS subdomain: at most 253 characters."""
MAX_NODE_ID = 128
MAX_RELEASE = 10_000
"""Node ids one declaration may release (an island has at most 100,000 nodes)."""
MAX_NODE_SPEC_BYTES = 4096
"""An island's node_spec, as JSON (checked after decoding: its size is that of its JSON)."""
MAX_TICKS = 100_000
"""Manual ticks one request may run."""
MAX_OFFER_CELLS = 1000
"""Cells of one island's base load offer grid."""
MAX_NOTES = 2000
"""Characters of a base load block's notes."""

NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f-\x9f]*(?![\s\S])"
"""A string with no control character (C0, DEL or C1): a NUL or a newline in a name that reaches
a Kubernetes API, a log or a console is never what a client meant. It ends in "nothing follows"
rather than `$`, which in Python lets a final newline through; both JSON Schema's regular
expressions and Python's read it the same."""

Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
PriorityClass = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_PRIORITY_CLASS,
        pattern=NO_CONTROL_CHARACTERS,
        description="no control characters",
    ),
]
NodeId = Annotated[str, msgspec.Meta(max_length=MAX_NODE_ID)]
Count = Annotated[int, msgspec.Meta(gt=0)]
"""Nodes, GPUs, pods, hours: a whole number above 0 (the market checks the upper bounds that
depend on the island)."""
NotNegative = Annotated[int, msgspec.Meta(ge=0)]

PriceIn = Annotated[
    Decimal,
    msgspec.Meta(
        description="USD per GPU-hour: above 0, at most 1000, at most 4 decimals",
        extra={"money": "price"},
    ),
]
"""A price as the JSON text spells it: 2.99999999999999999999 stays that (and is refused for
its decimals), never a float's 3.0. Its range is money.py's (`extra` names the kind of money
for the OpenAPI document, apidoc.py)."""
AmountIn = Annotated[
    Decimal, msgspec.Meta(description="USD, at most 6 decimals", extra={"money": "amount"})
]
PositiveAmountIn = Annotated[
    Decimal,
    msgspec.Meta(description="USD, above 0, at most 6 decimals", extra={"money": "positive"}),
]
"""An amount the market refuses at or below 0 (a spend limit, a wire)."""

Price = Annotated[float, msgspec.Meta(description="USD per GPU-hour")]
Amount = Annotated[float, msgspec.Meta(description="USD (at most 6 decimals)")]
Time = Annotated[datetime, msgspec.Meta(description="RFC 3339, UTC")]


# --- request bodies -------------------------------------------------------------------------


class Body(msgspec.Struct, forbid_unknown_fields=True):
    """A request body: unknown fields are refused."""


class CapacityDeclaration(Body):
    """A VM cluster's declaration: how many GPUs at most, at what price at most."""

    max_gpus: Annotated[
        NotNegative, msgspec.Meta(description="a multiple of the island's gpus_per_node")
    ]
    max_price_per_gpu_hour: PriceIn | None = None
    release: Annotated[
        list[NodeId],
        msgspec.Meta(max_length=MAX_RELEASE, description="held nodes to give back first"),
    ] = []


class BidChange(Body):
    limit_price_per_gpu_hour: PriceIn


class NewJob(Body):
    """A job of `nodes` whole-node pods, or of `pods` pods of `gpus_per_pod` GPUs each (under
    the island's gpus_per_node: packed onto the cluster's base load block, never bidding)."""

    name: Name
    nodes: Count | None = None
    priority_class: PriorityClass | None = None
    limit_price_per_gpu_hour: PriceIn | None = None
    pods: Count | None = None
    gpus_per_pod: Count | None = None


class JobChange(Body):
    """A field left out keeps its value; null removes it."""

    limit_price_per_gpu_hour: PriceIn | msgspec.UnsetType | None = msgspec.UNSET
    priority_class: PriorityClass | msgspec.UnsetType | None = msgspec.UNSET


class SpendLimitChange(Body):
    usd_per_day: Annotated[
        PositiveAmountIn | None, msgspec.Meta(description="null removes the limit")
    ]


class NewAccount(Body):
    name: Name
    balance_usd: AmountIn = Decimal(0)


class Credit(Body):
    amount_usd: Annotated[AmountIn, msgspec.Meta(description="negative corrects a credit")]


class NewCluster(Body):
    account: Name
    island: Name
    kind: Kind
    name: Name


class IslandChange(Body):
    """Creates the island (gpus_per_node, nodes and reserve_price required) or changes it."""

    gpus_per_node: Count | None = None
    nodes: Count | None = None
    reserve_price: PriceIn | None = None
    node_spec: Annotated[
        Any, msgspec.Meta(description=f"free-form, at most {MAX_NODE_SPEC_BYTES} bytes of JSON")
    ] = msgspec.UNSET
    base_load_cap: NotNegative | None = None


class NewBlock(Body):
    """A base load block: fixed nodes, term and rate."""

    nodes: Count
    rate_per_gpu_hour: PriceIn
    term_hours: Count


class PostedCell(Body):
    """A cell of an island's offer grid: a size (whole nodes) for a term, at a rate per GPU-hour
    (none: posted without a rate, it reads sold out)."""

    size_gpus: Count
    term_hours: Count
    rate_per_gpu_hour: PriceIn | None = None


class OfferGrid(Body):
    """An island's base load offers, as a whole: whether tenants may buy them, the island's
    reservable inventory (nodes blocks may reserve), and the cells."""

    buying_open: bool
    reservable_nodes: NotNegative
    cells: Annotated[list[PostedCell], msgspec.Meta(max_length=MAX_OFFER_CELLS)]


class NewPurchase(Body):
    """A posted cell of the cluster's island: a size in GPUs for a term in hours."""

    size_gpus: Count
    term_hours: Count


class PackingChange(Body):
    enabled: bool


class BlockChange(Body):
    """A change of a live block. A new rate or size ends the block now and starts another with
    the new figures; the end date and the notes change in place. A field left out is kept."""

    rate_per_gpu_hour: PriceIn | msgspec.UnsetType = msgspec.UNSET
    nodes: Count | msgspec.UnsetType = msgspec.UNSET
    ends_at: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=64,
                description="RFC 3339 (no offset means UTC), later than now",
                extra_json_schema={"format": "date-time"},
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    notes: Annotated[str, msgspec.Meta(max_length=MAX_NOTES)] | msgspec.UnsetType | None = (
        msgspec.UNSET
    )


class Wire(Body):
    amount_usd: Annotated[PositiveAmountIn, msgspec.Meta(description="USD received")]


class TickRequest(Body):
    count: Annotated[int, msgspec.Meta(gt=0, le=MAX_TICKS)] = 1
    island: Annotated[Name | None, msgspec.Meta(description="whose statistics lead")] = None


# --- answers --------------------------------------------------------------------------------


class View(msgspec.Struct, kw_only=True):
    """An answer (the fields in the order they go on the wire)."""


class HeldNodeView(View):
    id: str
    granted_at: Time | None
    window_ends_at: Time | None
    locked_price: Price | None


class ClusterView(View):
    """The cluster a token acts for: what its console needs to know before anything else."""

    id: str
    account: str
    island: str
    kind: Kind
    gpus_per_node: int


class PendingDetailView(View, omit_defaults=True):
    """The figures of `pending_reason` (docs/market.md "Why it waits"): each cause gives its
    own and leaves the others out."""

    since: Time | None = None
    """billing-hold: since when the account's balance is at or below zero (as
    `GET /api/account` reads it)."""
    balance_usd: Amount | None = None
    """billing-hold: the account's balance."""
    left_usd: Amount | None = None
    """spend-limit: what is left of the limit (never negative)."""
    worst_case_usd: Amount | None = None
    """spend-limit: the worst case of the demand that does not fit."""
    ceiling: Price | None = None
    """bid-too-low, windows, outbid: the price the demand bids (left out under bid-too-low
    for a job with no limit price)."""
    reserve_price: Price | None = None
    """bid-too-low."""
    nodes: int | None = None
    """no-supply, windows, outbid: the nodes the demand waits for."""
    market_nodes: int | None = None
    """no-supply: the island's nodes in service outside base load blocks."""
    contestable_at: Time | None = None
    """windows: when the nodes can be won within the ceiling; outbid: when windows let them
    go, if they hold them."""
    price_then: Price | None = None
    """windows: the price to win at `contestable_at`."""
    price_to_win: Price | None = None
    """outbid: the price to win the nodes, above the ceiling."""
    gpus: int | None = None
    """PackingDisabled, ReservedBusy, ReservedTooSmall: the GPUs the job asks for."""


class CapacityView(View):
    """A VM cluster's declaration and what it holds."""

    cluster: str
    island: str
    gpus_per_node: int
    max_gpus: int
    max_price_per_gpu_hour: Price | None
    held_gpus: int
    pending_gpus: int
    nodes: list[HeldNodeView]
    rate: Price | None
    bid_too_low: bool
    spend_limit: Amount | None
    pending_reason: PendingReason | None
    """Why pending GPUs wait, as of the island's last tick (null: nothing pending then)."""
    pending_detail: PendingDetailView | None


class BidView(View):
    """A Kubernetes cluster's limit price."""

    cluster: str
    limit_price_per_gpu_hour: Price | None
    bid_too_low: bool
    pending_reason: PendingReason | None
    """The first cause, in the order, that holds for any of its jobs (or the cluster's
    refusal), as of the island's last tick."""
    pending_detail: PendingDetailView | None


class JobEventView(View):
    type: str
    """BidTooLow, Outbid, Provisioned, Preempted, WindowVoided, Finished, NodeCordoned, ..."""
    at: Time
    detail: str


class JobView(View):
    name: str
    nodes: int
    state: JobState
    priority_class: str | None
    provisioned_at: Time | None
    limit_price_per_gpu_hour: Price | None
    rate: Price | None
    """The cluster's market rate while the job runs on market nodes (null on its block)."""
    node_ids: list[str]
    block: str | None
    """The base load block the job runs on (null on market nodes and while it waits)."""
    bid_too_low: bool
    events: list[JobEventView]
    pods: int | None
    gpus_per_pod: int | None
    """Set for a job of pods smaller than one node (its `nodes` is 0)."""
    reason: str | None
    """Why a job smaller than one node waits: ReservedTooSmall, ReservedBusy or
    PackingDisabled (null while it runs)."""
    pending_reason: PendingReason | None
    """Why the pending job waits, as of the island's last tick (null once it runs)."""
    pending_detail: PendingDetailView | None


class SpendLimitView(View):
    usd_per_day: Amount | None
    window_started_at: Time | None
    spent_usd: Amount
    committed_usd: Amount
    left_usd: Amount | None
    """Never negative; null with no limit."""
    over_by_usd: Amount | None
    """How far spent and committed stand over a limit lowered under them (0 when not, null
    with no limit): no new commitment is made while it is above 0."""


class OwnAccountView(View):
    """The account as one of its clusters reads it (`GET /api/account`): the account's money,
    and this cluster's spend window."""

    account: str
    balance_usd: Amount
    deposit_held_usd: Amount
    """Security deposits the account's base load purchases hold, taken from the balance."""
    owed_usd: Amount
    """Owed by wire for base load purchases, in all."""
    owed_by: Time | None
    """When the earliest of it is due (null when nothing is owed)."""
    billing_hold_since: Time | None
    """Since when the balance is at or below zero (null while it is above)."""
    spent_24h_usd: Amount
    """Billed to this cluster in its spend window (as `GET /api/spend-limit`)."""
    committed_usd: Amount
    """This cluster's worst cases still committed beyond what is billed."""
    rate_usd_per_hour: Amount
    """What the account's clusters are billed per hour now: market nodes and base load."""
    runway_hours: float | None
    """Hours at that rate until the balance reaches zero (null when the rate is 0)."""


class BillingRowView(View):
    start: Time
    end: Time
    gpu_hours: float
    amount_usd: Amount
    amount_units: Annotated[int, msgspec.Meta(description="exact: 3.6e12 units make one USD")]
    kind: BillingKind


class PriceLevel(View):
    """Demand of other clusters at one price, never who: a price level and a node count."""

    price: Price
    nodes: Annotated[
        int,
        msgspec.Meta(
            description="whole nodes; negative: demand holding nodes now that would give way"
        ),
    ]


class CoreAddition(View):
    """The coalition that required the core's addition above VCG."""

    coalition: Annotated[
        list[PriceLevel],
        msgspec.Meta(
            description="the demand it would bring in (and, negative, the demand holding nodes "
            "now that would give way)"
        ),
    ]
    value: Annotated[
        float,
        msgspec.Meta(
            description="USD per hour over the reserve it offers: the least the winners it "
            "outbids pay together above the reserve"
        ),
    ]


class ReceiptParts(View):
    """A receipt's amount in parts, USD, adding up to amount_usd."""

    reserve: Annotated[Amount, msgspec.Meta(description="the reserve price on the won nodes")]
    displaced: Annotated[Amount, msgspec.Meta(description="VCG: the demand of others kept out")]
    core: Annotated[Amount, msgspec.Meta(description="the core's addition above VCG")]
    protected: Annotated[Amount, msgspec.Meta(description="the protected nodes' payment")]


class ReceiptUnits(View):
    """The same parts in ledger units, exact: 3.6e12 units make one USD."""

    reserve: int
    displaced: int
    core: int
    protected: int


class ReceiptView(View):
    """Why a cluster paid what one tick billed it for its market nodes (`GET /api/receipts`)."""

    tick: int
    time: Time
    nodes: Annotated[int, msgspec.Meta(description="market nodes held: won and protected")]
    gpus: int
    rate: Price
    amount_usd: Annotated[Amount, msgspec.Meta(description="what the tick billed its interval")]
    amount_units: Annotated[int, msgspec.Meta(description="exact: 3.6e12 units make one USD")]
    parts: ReceiptParts
    parts_units: ReceiptUnits
    displaced: Annotated[
        list[PriceLevel], msgspec.Meta(description="the demand of others its won nodes keep out")
    ]
    core: CoreAddition | None
    protected_displaced: Annotated[
        list[PriceLevel], msgspec.Meta(description="what its protected nodes keep out")
    ]
    capped: Annotated[
        bool,
        msgspec.Meta(description="the protected part is the locked price, not what they displace"),
    ]


class IslandView(View):
    id: str
    gpus_per_node: int
    nodes: int
    reserve_price: Price
    node_spec: Any
    base_load_cap: int
    buying_open: bool
    tick_seconds: Annotated[
        float, msgspec.Meta(description="how often the island ticks, in seconds of market time")
    ]


class ReceivableView(View):
    """What a base load purchase still owes by wire."""

    purchase: Annotated[str, msgspec.Meta(description="the block bought")]
    cluster: str
    owed_usd: Amount
    owed_by: Annotated[Time, msgspec.Meta(description="due before this time")]
    overdue: bool
    deposit_held_usd: Amount


class AccountView(View):
    name: str
    balance_usd: Amount
    billing_hold: bool
    clusters: list[str]
    owed_usd: Amount
    """Owed by wire for base load purchases, in all."""
    overdue_usd: Amount
    """Of it, what is past its due date."""
    receivables: list[ReceivableView]


class ClusterCreatedView(View):
    id: str
    token: Annotated[str, msgspec.Meta(description="shown once; only its hash is stored")]
    account: str
    island: str
    kind: Kind


class NodeView(View):
    id: str
    idx: int
    state: NodeState
    cluster: str | None
    job: str | None
    block: str | None
    granted_at: Time | None
    window_ends_at: Time | None
    locked_price: Price | None
    replacement_owed_until: Time | None


class BlockView(View):
    """A base load block."""

    id: str
    cluster: str
    island: str
    nodes: int
    gpus: int
    rate_per_gpu_hour: Price
    term_hours: Annotated[float, msgspec.Meta(description="from starts_at to ends_at")]
    price_usd: Amount
    starts_at: Time
    ends_at: Time
    state: BlockState
    ended_at: Time | None
    billed_until: Time | None
    billed_usd: Amount
    """What the block billed so far (its 5-minute steps, less what a stop gave back)."""
    deposit_usd: Amount
    """The security deposit its purchase took (0 when the balance covered the whole price)."""
    deposit_held_usd: Amount
    owed_usd: Amount
    """What its purchase still owes by wire."""
    owed_by: Time | None
    """When the wire is due (null when nothing was owed by wire)."""
    overdue: bool
    origin: BlockOrigin
    """`purchase` (bought at a posted cell) or `account-team` (made by the operator)."""
    purchase: str
    """The block whose deposit and receivable it carries: itself, or the block a change of
    rate or size continued."""
    notes: str | None


class BlocksView(View):
    """A cluster's base load: its live block, and the earlier ones, newest first."""

    live: BlockView | None
    past: list[BlockView]


class OfferCell(View):
    size_gpus: int
    nodes: int
    term_hours: int
    rate_per_gpu_hour: Price | None
    price_usd: Amount | None
    """The whole block's price: rate × GPUs × term hours."""
    deposit_usd: Amount | None
    """The security deposit it would take from this account (0: the balance covers it)."""
    state: OfferState
    until: Time | None
    """For a size that does not fit now: when enough earlier blocks lapse for it to fit."""


class OffersView(View):
    """An island's base load offer grid as a cluster may buy it now."""

    island: str
    gpus_per_node: int
    buying_open: bool
    reservable_nodes: int
    reserved_nodes: int
    cells: list[OfferCell]
    live_block: str | None
    """The cluster's live block (a second one is refused one-per-cluster)."""
    detail: str | None
    """Said when buying is closed on the island."""


class PackingView(View):
    cluster: str
    enabled: bool


# --- the feeds' rows (docs/api.md "Feed") ----------------------------------------------------
#
# One Struct per published feed (feeds/<name>.toml names it): its fields after the island, tick
# and time are the websocket message's `data`, and their JSON Schemas (type, `description`,
# `extra_json_schema`) are the ones the AsyncAPI and OpenAPI documents publish
# (feed/catalog.py). A feed's SQL (sql/feed_<name>.sql) selects the same names, in order.


class FeedRow(View):
    """One tick of one feed, as its latest-row endpoint answers it."""

    island: str
    tick: int
    time: Time


class TickStats(FeedRow):
    """An island's market statistics at one tick (`GET /api/market/stats`)."""

    vwap: Annotated[
        Price | None,
        msgspec.Meta(
            description="USD per GPU-hour, weighted by GPUs held; null when no cluster holds "
            "market nodes"
        ),
    ]
    min: Annotated[Price | None, msgspec.Meta(description="lowest cluster rate, USD per GPU-hour")]
    max: Annotated[Price | None, msgspec.Meta(description="highest cluster rate, USD per GPU-hour")]
    gpus: Annotated[int, msgspec.Meta(description="GPUs held in the market")]
    clusters: Annotated[int, msgspec.Meta(description="clusters holding market nodes")]
    pending_gpus: Annotated[int, msgspec.Meta(description="GPUs declared and not granted")]
    reserve_price: Price


class LadderLaterView(View):
    at: Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
    """RFC 3339, as the feed spells it (clock.rfc3339)."""
    price_per_gpu_hour: Price


class LadderRungView(View):
    nodes: int
    gpus: int
    price_per_gpu_hour: Annotated[
        float,
        msgspec.Meta(
            description="USD per GPU-hour: the lowest price that wins n nodes now, or, for a "
            "rung not contestable now, what it would take at contestable_at against the demand "
            "standing now"
        ),
    ]
    contestable_at: Annotated[
        str | None,
        msgspec.Meta(
            extra_json_schema={"format": "date-time"},
            description="null: contestable in this tick's auction (a declaration now competes "
            "at the next tick); else the earliest time enough protection windows end",
        ),
    ]
    """RFC 3339, as the feed spells it (clock.rfc3339)."""
    reason: Annotated[
        LadderReason | None,
        msgspec.Meta(
            description="why the rung cannot be contested now, as a code (`windows-hold`: "
            "protection windows hold its nodes until contestable_at); null when it can"
        ),
    ]
    later: Annotated[
        list[LadderLaterView],
        msgspec.Meta(
            description="the rung's price from each later time protection windows end within "
            "the hour, where it changes: the next release may bring more supply"
        ),
    ]


class LadderView(FeedRow):
    """The price-to-win ladder of an island at one tick (`GET /api/market/ladder`)."""

    reserve_price: Price
    rungs: Annotated[
        list[LadderRungView],
        msgspec.Meta(
            description="one rung per node count n = 1 ... the nodes contestable now, then on "
            "to those protection windows hold now"
        ),
    ]


class LaterPriceView(View):
    at: Time
    price_per_gpu_hour: Price


class OwnRungView(View):
    nodes: Annotated[int, msgspec.Meta(description="n more nodes than the cluster holds")]
    gpus: int
    price_per_gpu_hour: Annotated[
        float,
        msgspec.Meta(
            description="USD per GPU-hour: the lowest price at which, if nothing else changed, "
            "the next tick grants n more nodes (or, with contestable_at, the tick then)"
        ),
    ]
    usd_per_hour: Annotated[
        float,
        msgspec.Meta(
            description="USD per hour the cluster's whole holding would be billed then, at most"
        ),
    ]
    contestable_at: Annotated[
        Time | None,
        msgspec.Meta(description="null: the next tick grants it; else when windows let it"),
    ]
    later: Annotated[
        list[LaterPriceView],
        msgspec.Meta(
            description="the rung's price from each later time windows lapse within the hour, "
            "where it changes"
        ),
    ]


class OwnLadderView(View):
    """The cluster's own ladder at the island's latest tick, its own demand left out
    (`GET /api/ladder`)."""

    cluster: str
    island: str
    tick: int
    time: Time
    held_nodes: int
    rungs: list[OwnRungView]


class RateView(View):
    gpus: int
    rate: Price


class RatesView(FeedRow):
    """Each market cluster's GPUs and rate at one tick, anonymous (`GET /api/market/rates`)."""

    rates: list[RateView]


class ClusterEventView(View):
    """What happened to a cluster at one tick, on its own feed channel."""

    type: Annotated[
        str,
        msgspec.Meta(
            description="Granted, Reclaimed (nodes won or lost at the tick), VerdictStarted, "
            "VerdictEnded (`verdict`), or a job's event type (BidTooLow, Provisioned, "
            "Preempted, ...)"
        ),
    ]
    at: Time
    detail: str
    job: Annotated[str | None, msgspec.Meta(description="the job a job event is about")]
    nodes: Annotated[list[str], msgspec.Meta(description="the nodes granted or reclaimed")]
    verdict: Annotated[
        str | None,
        msgspec.Meta(description="bid-too-low, spend-limit or billing-hold (Verdict events)"),
    ]


class PendingJobView(View):
    """A waiting job on its cluster's own feed channel: why it waits, with the figures."""

    name: str
    nodes: int
    pending_reason: PendingReason | None
    pending_detail: PendingDetailView | None


class ClusterTickView(FeedRow):
    """One tick of a cluster's own feed channel (`cluster`, docs/api.md "The feed")."""

    cluster: str
    kind: Kind
    held_nodes: Annotated[int, msgspec.Meta(description="market nodes held after the tick")]
    held_gpus: Annotated[int, msgspec.Meta(description="GPUs of those nodes")]
    node_ids: Annotated[list[str], msgspec.Meta(description="the market nodes held")]
    base_load_nodes: Annotated[int, msgspec.Meta(description="nodes of its base load block")]
    pending_gpus: Annotated[int, msgspec.Meta(description="GPUs asked for and not held")]
    pending_reason: Annotated[
        PendingReason | None,
        msgspec.Meta(description="why pending GPUs wait: the first cause that holds (or null)"),
    ]
    pending_detail: Annotated[
        PendingDetailView | None, msgspec.Meta(description="the figures of pending_reason")
    ]
    pending_jobs: Annotated[
        list[PendingJobView], msgspec.Meta(description="a Kubernetes cluster's waiting jobs")
    ]
    rate: Annotated[Price | None, msgspec.Meta(description="USD per GPU-hour this tick")]
    verdicts: Annotated[list[str], msgspec.Meta(description="the verdicts standing after the tick")]
    events: Annotated[
        list[ClusterEventView], msgspec.Meta(description="what happened at this tick")
    ]
    receipt: Annotated[
        ReceiptView | None,
        msgspec.Meta(description="why it pays its rate this tick (null: no market nodes)"),
    ]


FEED_ROWS: tuple[type[FeedRow], ...] = (TickStats, LadderView, RatesView)
"""The published rows, each named by its feed's declaration (feeds/<name>.toml `row`)."""


class TicksRun(TickStats):
    """The statistics of the last tick run: of the island asked for (else the first), then of
    every island."""

    islands: list[TickStats]


class Candle(View):
    """One bucket of the per-tick vwap (`GET /api/market/series`)."""

    start: Time
    open: Price | None
    high: Price | None
    low: Price | None
    close: Price | None
    vwap: Price | None
    min: Price | None
    max: Price | None
    reserve_price: Annotated[
        Price, msgspec.Meta(description="the reserve price the bucket's last tick cleared at")
    ]
    gpu_hours: float
    ticks: int
    closed: Annotated[bool, msgspec.Meta(description="false for the bucket still open")]
