"""A small typed client for burstmarket's HTTP API: what a tenant does, and the operator calls.

Async (`TenantClient`, `OperatorClient`) and synchronous twins (`SyncTenantClient`,
`SyncOperatorClient`) share every call: each is written once, as the requests it makes, and
run by either. Answers are msgspec Structs; money is `Decimal` (JSON numbers read exactly),
times are aware datetimes. What goes wrong is raised as the client's own error, a `ClientError`:
`Refused` (a 4xx, with the server's code, detail and figures), `Unreachable` (no answer: refused
connection, timeout) or `ServerError` (a 5xx, or an answer that is not what the API says).

The simulated tenants use exactly this client, so everything they do goes through the same HTTP
paths as a real tenant's.

Ladder-aware bidding, as in docs/client.md: ask for 4 whole nodes, paying no more than 3.0 per
GPU-hour, at the price it takes to win them (plus a margin)::

    with SyncTenantClient("http://127.0.0.1:8000", token="<cluster token>") as me:
        capacity = me.capacity()
        rung = me.ladder(capacity.island).rung(4)
        if rung is not None and rung.price_per_gpu_hour <= 3:
            bid = min(Decimal(3), (rung.price_per_gpu_hour * Decimal("1.1")).quantize(TICK))
            me.declare(4 * capacity.gpus_per_node, bid)

`declare_to_win` is that example as one call, counting the nodes the cluster already holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, cast, overload

import httpx
import msgspec

from burstmarket.money import to_decimal
from burstmarket.states import BillingKind, JobState, Kind, PendingReason

T = TypeVar("T")
P = ParamSpec("P")

Money = Decimal | int | float | str
"""A price or amount given to the client: kept exact (a float by its shortest repr, 2.2 is 2.2)."""
TICK = Decimal("0.0001")
"""The price grid: a price has at most 4 decimals."""


# --- errors -----------------------------------------------------------------------------------


class ClientError(Exception):
    """Anything this client raises about a call."""


class Refused(ClientError):
    """The server refused a request: HTTP 4xx with `{"error", "detail", ...figures}`."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        self.status = status
        self.code: str = str(body.get("error", "unknown"))
        self.detail: str = str(body.get("detail", ""))
        self.figures: dict[str, Any] = {
            k: v for k, v in body.items() if k not in ("error", "detail")
        }
        super().__init__(f"{status} {self.code}: {self.detail}")


class Unreachable(ClientError):
    """No answer: the connection was refused or dropped, or the server took too long."""


class ServerError(ClientError):
    """A 5xx (a bug on the server), or an answer that is not the shape the API promises."""


# --- answers ----------------------------------------------------------------------------------


class Island(msgspec.Struct, frozen=True):
    id: str
    gpus_per_node: int
    nodes: int
    reserve_price: Decimal
    node_spec: dict[str, Any] | None = None
    """What a node is (`gpus`: the GPU model, `cpu`, `memory`, ...), as the operator set it."""
    base_load_cap: int = 0
    buying_open: bool = False


class Stats(msgspec.Struct, frozen=True):
    """An island's market statistics at one tick; prices USD per GPU-hour."""

    island: str
    tick: int
    time: datetime
    vwap: Decimal | None
    """What holders pay: the mean of the clusters' rates, weighted by their GPUs."""
    min: Decimal | None
    max: Decimal | None
    gpus: int
    clusters: int
    pending_gpus: int
    reserve_price: Decimal


class TickReport(Stats, frozen=True):
    """`OperatorClient.ticks`: one island's statistics of the last tick run, and every island's."""

    islands: list[Stats]


class LaterPrice(msgspec.Struct, frozen=True):
    at: datetime
    price_per_gpu_hour: Decimal


class Rung(msgspec.Struct, frozen=True):
    """The price to win `nodes` whole nodes: displacing the lowest standing bids it takes."""

    nodes: int
    gpus: int
    price_per_gpu_hour: Decimal
    """Now, or for a rung not contestable now, at `contestable_at` against today's demand."""
    contestable_at: datetime | None = None
    """None: contestable now (a declaration competes for it at the next tick); else the earliest
    time enough protection windows end for it to be."""
    reason: str | None = None
    """Why it cannot be contested now, as a code (`windows-hold`: protection windows hold its
    nodes until `contestable_at`); None when it can."""
    later: list[LaterPrice] = []
    """The rung's price from each later time windows end within the hour, where it changes:
    the next release may bring more supply, so waiting may cost less."""

    @property
    def contestable_now(self) -> bool:
        return self.contestable_at is None


class Ladder(msgspec.Struct, frozen=True):
    island: str
    tick: int
    time: datetime
    reserve_price: Decimal
    rungs: list[Rung]

    def rung(self, nodes: int) -> Rung | None:
        """The rung for `nodes` nodes; None past every node that is or will be contestable."""
        return next((r for r in self.rungs if r.nodes == nodes), None)


class OwnRung(msgspec.Struct, frozen=True):
    """What it takes for the cluster to hold `nodes` more nodes, its own demand left out."""

    nodes: int
    gpus: int
    price_per_gpu_hour: Decimal
    """The lowest price at which, if nothing else changed, the next tick grants them (or, with
    `contestable_at`, the tick then)."""
    usd_per_hour: Decimal
    """What the cluster's whole holding would be billed per hour then, at most."""
    contestable_at: datetime | None = None
    """None: the next tick grants it; else when protection windows let it."""
    later: list[LaterPrice] = []
    """The rung's price from each later time windows lapse within the hour, where it changes:
    waiting may cost less."""

    @property
    def next_tick(self) -> bool:
        return self.contestable_at is None


class OwnLadder(msgspec.Struct, frozen=True):
    cluster: str
    island: str
    tick: int
    time: datetime
    held_nodes: int
    rungs: list[OwnRung]

    def rung(self, nodes: int) -> OwnRung | None:
        """The rung for `nodes` more nodes; None past what the cluster could get within the
        hour."""
        return next((r for r in self.rungs if r.nodes == nodes), None)


class HeldNode(msgspec.Struct, frozen=True):
    id: str
    granted_at: datetime | None
    window_ends_at: datetime | None
    locked_price: Decimal | None


class PendingDetail(msgspec.Struct, frozen=True):
    """The figures of a `pending_reason`: each cause gives its own, the rest stay None
    (docs/market.md "Why it waits")."""

    since: datetime | None = None
    """billing-hold: since when the account's balance is at or below zero."""
    balance_usd: Decimal | None = None
    """billing-hold: the account's balance."""
    left_usd: Decimal | None = None
    """spend-limit: what is left of the limit."""
    worst_case_usd: Decimal | None = None
    """spend-limit: the worst case of the demand that does not fit."""
    ceiling: Decimal | None = None
    """The price the demand bids (bid-too-low, windows, outbid)."""
    reserve_price: Decimal | None = None
    """bid-too-low: the island's reserve."""
    nodes: int | None = None
    """no-supply, windows, outbid: the nodes it waits for."""
    market_nodes: int | None = None
    """no-supply: the island's nodes in service outside base load blocks."""
    contestable_at: datetime | None = None
    """windows: when the nodes can be won within the ceiling."""
    price_then: Decimal | None = None
    """windows: the price to win at `contestable_at`."""
    price_to_win: Decimal | None = None
    """outbid: the price to win the nodes, above the ceiling."""
    gpus: int | None = None
    """The small-job reasons: the GPUs the job asks for."""


class Capacity(msgspec.Struct, frozen=True):
    """A VM cluster's declaration and what it holds."""

    cluster: str
    island: str
    gpus_per_node: int
    max_gpus: int
    max_price_per_gpu_hour: Decimal | None
    held_gpus: int
    pending_gpus: int
    nodes: list[HeldNode]
    rate: Decimal | None
    bid_too_low: bool
    spend_limit: Decimal | None = None
    pending_reason: PendingReason | None = None
    """Why the pending GPUs wait, as of the last tick; None: nothing was pending."""
    pending_detail: PendingDetail | None = None


class Bid(msgspec.Struct, frozen=True):
    """A Kubernetes cluster's limit price."""

    cluster: str
    limit_price_per_gpu_hour: Decimal | None
    bid_too_low: bool
    pending_reason: PendingReason | None = None
    """The first cause, in the order, that holds for any of its jobs, as of the last tick."""
    pending_detail: PendingDetail | None = None


class JobEvent(msgspec.Struct, frozen=True):
    type: str
    at: datetime
    detail: str


class Job(msgspec.Struct, frozen=True):
    name: str
    nodes: int
    state: JobState
    provisioned_at: datetime | None
    limit_price_per_gpu_hour: Decimal | None
    rate: Decimal | None
    node_ids: list[str]
    events: list[JobEvent]
    priority_class: str | None = None
    bid_too_low: bool = False
    pods: int | None = None
    gpus_per_pod: int | None = None
    """Set for a job of pods smaller than one node (packed onto the cluster's block)."""
    reason: str | None = None
    """Why such a job waits: ReservedTooSmall, ReservedBusy, PackingDisabled."""
    block: str | None = None
    """The base load block the job runs on (then `rate` is null: it bids nothing)."""
    pending_reason: PendingReason | None = None
    """Why the pending job waits, as of the last tick; None once it runs."""
    pending_detail: PendingDetail | None = None


class SpendLimit(msgspec.Struct, frozen=True):
    usd_per_day: Decimal | None
    window_started_at: datetime | None
    spent_usd: Decimal
    committed_usd: Decimal
    left_usd: Decimal | None
    """Never negative; None with no limit."""
    over_by_usd: Decimal | None = None
    """How far spent and committed stand over a limit lowered under them: no new commitment
    is made while it is above 0."""


class OwnAccount(msgspec.Struct, frozen=True):
    """The account as this cluster reads it: the account's balance, base load money, billing
    hold, rate and runway, and this cluster's spend window."""

    account: str
    balance_usd: Decimal
    deposit_held_usd: Decimal
    owed_usd: Decimal
    owed_by: datetime | None
    billing_hold_since: datetime | None
    spent_24h_usd: Decimal
    committed_usd: Decimal
    rate_usd_per_hour: Decimal
    runway_hours: float | None


class BillingRow(msgspec.Struct, frozen=True):
    start: datetime
    end: datetime
    gpu_hours: float
    amount_usd: Decimal
    kind: BillingKind
    amount_units: int = 0
    """The exact ledger sum (µUSD-per-hour × ms)."""


class PriceLevel(msgspec.Struct, frozen=True):
    """Other clusters' demand at one price, never who: negative nodes would give way."""

    price: Decimal
    nodes: int


class CoreAddition(msgspec.Struct, frozen=True):
    coalition: list[PriceLevel]
    value: Decimal
    """USD per hour over the reserve the coalition offers."""


class ReceiptParts(msgspec.Struct, frozen=True):
    reserve: Decimal
    displaced: Decimal
    core: Decimal
    protected: Decimal


class ReceiptUnits(msgspec.Struct, frozen=True):
    reserve: int
    displaced: int
    core: int
    protected: int


class Receipt(msgspec.Struct, frozen=True):
    """Why a tick billed the cluster what it did for its market nodes (docs/api.md)."""

    tick: int
    time: datetime
    nodes: int
    gpus: int
    rate: Decimal
    amount_usd: Decimal
    amount_units: int
    parts: ReceiptParts
    """USD, adding up to `amount_usd`."""
    parts_units: ReceiptUnits
    """Exact, adding up to `amount_units`."""
    displaced: list[PriceLevel]
    core: CoreAddition | None
    protected_displaced: list[PriceLevel]
    capped: bool


class Receivable(msgspec.Struct, frozen=True):
    """What a base load purchase still owes by wire."""

    purchase: str
    cluster: str
    owed_usd: Decimal
    owed_by: datetime
    overdue: bool
    deposit_held_usd: Decimal


class Account(msgspec.Struct, frozen=True):
    name: str
    balance_usd: Decimal
    billing_hold: bool
    clusters: list[str]
    owed_usd: Decimal = Decimal(0)
    overdue_usd: Decimal = Decimal(0)
    receivables: list[Receivable] = []


class OfferCell(msgspec.Struct, frozen=True):
    """A cell of the island's base load offer grid, as this cluster may buy it now."""

    size_gpus: int
    nodes: int
    term_hours: int
    rate_per_gpu_hour: Decimal | None
    price_usd: Decimal | None
    """The whole block: rate × GPUs × term hours."""
    deposit_usd: Decimal | None
    """The security deposit it would take (0: the balance covers the price)."""
    state: str
    """available | sold-out | not-available"""
    until: datetime | None = None
    """For a size that does not fit now: when it will."""

    @property
    def available(self) -> bool:
        return self.state == "available"


class Offers(msgspec.Struct, frozen=True):
    island: str
    gpus_per_node: int
    buying_open: bool
    reservable_nodes: int
    reserved_nodes: int
    cells: list[OfferCell]
    live_block: str | None = None
    """The cluster's live block: a second purchase is refused until it ends."""
    detail: str | None = None

    def cell(self, size_gpus: int, term_hours: int) -> OfferCell | None:
        return next(
            (c for c in self.cells if (c.size_gpus, c.term_hours) == (size_gpus, term_hours)),
            None,
        )


class Block(msgspec.Struct, frozen=True):
    """A base load block."""

    id: str
    cluster: str
    island: str
    nodes: int
    gpus: int
    rate_per_gpu_hour: Decimal
    term_hours: Decimal
    price_usd: Decimal
    starts_at: datetime
    ends_at: datetime
    state: str
    """live | ended | cancelled | changed"""
    ended_at: datetime | None
    billed_until: datetime | None
    billed_usd: Decimal
    deposit_usd: Decimal
    deposit_held_usd: Decimal
    owed_usd: Decimal
    owed_by: datetime | None
    overdue: bool
    origin: str
    purchase: str
    notes: str | None = None


class BaseLoad(msgspec.Struct, frozen=True):
    """A cluster's live block (if any) and its earlier ones, newest first."""

    live: Block | None
    past: list[Block]


class Packing(msgspec.Struct, frozen=True):
    cluster: str
    enabled: bool


class ClusterCreated(msgspec.Struct, frozen=True):
    id: str
    token: str
    """Shown only here."""
    account: str
    island: str
    kind: Kind


# --- calls, written once for both clients --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and the type its answer decodes into."""

    method: str
    path: str
    answer: type[T]
    body: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)


Flow = Generator[Call[Any], Any, T]
"""A call's requests in order, each sent back its answer; returns the call's result."""


def one(call: Call[T]) -> Flow[T]:
    return cast(T, (yield call))


class endpoint(Generic[P, T]):  # lower case: a decorator, like `property`
    """A method written as a Flow, run by whichever client it is called on: awaited on the async
    clients, returned directly on the synchronous ones."""

    def __init__(self, flow: Callable[Concatenate[Any, P], Flow[T]]) -> None:
        self.flow = flow
        self.__doc__ = flow.__doc__

    @overload
    def __get__(
        self, client: _AsyncApi, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: _SyncApi, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        flow = self.flow

        if isinstance(client, _AsyncApi):

            async def run_async(*args: Any, **kwargs: Any) -> Any:
                steps = flow(client, *args, **kwargs)
                answer = None
                try:
                    while True:
                        answer = await client.send(steps.send(answer))
                except StopIteration as done:
                    return done.value

            return functools.update_wrapper(run_async, flow)

        def run(*args: Any, **kwargs: Any) -> Any:
            steps = flow(client, *args, **kwargs)
            answer = None
            try:
                while True:
                    answer = client.send(steps.send(answer))
            except StopIteration as done:
                return done.value

        return functools.update_wrapper(run, flow)


_encoder = msgspec.json.Encoder(decimal_format="number")


class _Transport:
    """What both clients share: the address, the token, and reading an answer."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {} if token is None else {"Authorization": f"Bearer {token}"}

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        headers = dict(self._headers)
        content = None
        if call.body is not None:
            content = _encoder.encode(call.body)
            headers["Content-Type"] = "application/json"
        return {
            "method": call.method,
            "url": self.base_url + call.path,
            "content": content,
            "params": {k: v for k, v in call.params.items() if v is not None},
            "headers": headers,
        }

    @staticmethod
    def _answer(call: Call[T], response: httpx.Response) -> T:
        status = response.status_code
        if 400 <= status < 500:
            try:
                found = msgspec.json.decode(response.content)
            except msgspec.DecodeError:
                found = {"error": "unknown", "detail": response.text}
            raise Refused(status, found if isinstance(found, dict) else {})
        if status >= 300:
            raise ServerError(f"{call.method} {call.path}: HTTP {status}: {response.text[:200]}")
        try:
            return msgspec.json.decode(response.content, type=call.answer)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise ServerError(f"{call.method} {call.path}: unexpected answer: {error}") from error


class _AsyncApi(_Transport):
    def __init__(
        self, base_url: str, token: str | None, *, http: httpx.AsyncClient | None = None
    ) -> None:
        super().__init__(base_url, token)
        self._http = http or httpx.AsyncClient(timeout=30)
        self._owns_http = http is None

    async def send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(**self._request(call))
        except httpx.TransportError as error:
            raise Unreachable(f"{call.method} {self.base_url}{call.path}: {error!r}") from error
        return self._answer(call, response)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()


class _SyncApi(_Transport):
    def __init__(
        self, base_url: str, token: str | None, *, http: httpx.Client | None = None
    ) -> None:
        super().__init__(base_url, token)
        self._http = http or httpx.Client(timeout=30)
        self._owns_http = http is None

    def send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(**self._request(call))
        except httpx.TransportError as error:
            raise Unreachable(f"{call.method} {self.base_url}{call.path}: {error!r}") from error
        return self._answer(call, response)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()


def _price(value: Money | None) -> Decimal | None:
    return None if value is None else to_decimal(value)


class _Market:
    """Public market data (no token needed)."""

    @endpoint
    def islands(self) -> Flow[list[Island]]:
        return one(Call("GET", "/api/islands", list[Island]))

    @endpoint
    def stats(self, island: str) -> Flow[Stats]:
        """The island's latest tick statistics."""
        return one(Call("GET", "/api/market/stats", Stats, params={"island": island}))

    @endpoint
    def ladder(self, island: str, max_nodes: int | None = None) -> Flow[Ladder]:
        """The price-to-win ladder of the island's latest tick: a rung per node count, with
        when it can be contested (`contestable_at`) if not now."""
        params = {"island": island, "max_nodes": max_nodes}
        return one(Call("GET", "/api/market/ladder", Ladder, params=params))


class _Tenant(_Market):
    """A cluster's view of the market (its cluster token)."""

    # --- VM clusters ----------------------------------------------------------------------

    @endpoint
    def capacity(self) -> Flow[Capacity]:
        """What the cluster declared and holds."""
        return one(Call("GET", "/api/vm/capacity", Capacity))

    @endpoint
    def declare(
        self, max_gpus: int, max_price_per_gpu_hour: Money | None, release: Iterable[str] = ()
    ) -> Flow[Capacity]:
        """Declare how many GPUs the cluster wants and the most it pays per GPU-hour; a lower
        `max_gpus` is a scale-down (nominated `release` nodes go first)."""
        body: dict[str, Any] = {
            "max_gpus": max_gpus,
            "max_price_per_gpu_hour": _price(max_price_per_gpu_hour),
        }
        nominated = list(release)
        if nominated:
            body["release"] = nominated
        return one(Call("PUT", "/api/vm/capacity", Capacity, body))

    @endpoint
    def own_ladder(self, max_nodes: int | None = None) -> Flow[OwnLadder]:
        """The cluster's own ladder at its island's last tick: for n more nodes, the lowest
        price at which the next tick grants them if nothing else changed, its own demand left
        out (it is never told to outbid itself)."""
        return one(Call("GET", "/api/ladder", OwnLadder, params={"max_nodes": max_nodes}))

    @endpoint
    def declare_to_win(
        self, nodes: int, ceiling: Money, margin: Money = Decimal("0.10")
    ) -> Flow[Capacity]:
        """Hold `nodes` nodes in all, bidding what it takes to win the ones the cluster does not
        hold yet (its own ladder's rung for that many more, plus `margin`), never above
        `ceiling`.

        The own ladder leaves the cluster's own demand out, so the bid wins at the next tick
        unless something else changes; a rung that windows hold now still has its price (the
        demand then waits for them). With nothing more to win the declaration keeps its price
        (at most `ceiling`); past every rung, or where the rung costs more than `ceiling`, it
        bids the ceiling and the demand waits."""
        top = to_decimal(ceiling)
        capacity = yield from one(Call("GET", "/api/vm/capacity", Capacity))
        held = capacity.held_gpus // capacity.gpus_per_node
        wanted = nodes - held
        bid = min(top, capacity.max_price_per_gpu_hour or top)
        if wanted > 0:
            ladder = yield from one(Call("GET", "/api/ladder", OwnLadder))
            rung = ladder.rung(nodes - ladder.held_nodes)
            bid = top
            if rung is not None:
                raised = rung.price_per_gpu_hour * (1 + to_decimal(margin))
                bid = min(top, raised.quantize(TICK, rounding=ROUND_HALF_UP))
        body = {"max_gpus": nodes * capacity.gpus_per_node, "max_price_per_gpu_hour": bid}
        return (yield from one(Call("PUT", "/api/vm/capacity", Capacity, body)))

    # --- Kubernetes clusters --------------------------------------------------------------

    @endpoint
    def bid(self) -> Flow[Bid]:
        return one(Call("GET", "/api/k8s/bid", Bid))

    @endpoint
    def set_bid(self, limit_price_per_gpu_hour: Money) -> Flow[Bid]:
        """The cluster's limit price, used by every job that does not set its own."""
        body = {"limit_price_per_gpu_hour": to_decimal(limit_price_per_gpu_hour)}
        return one(Call("PUT", "/api/k8s/bid", Bid, body))

    @endpoint
    def submit_job(
        self,
        name: str,
        nodes: int | None = None,
        *,
        pods: int | None = None,
        gpus_per_pod: int | None = None,
        priority_class: str | None = None,
        limit_price_per_gpu_hour: Money | None = None,
    ) -> Flow[Job]:
        """A job of `nodes` whole-node pods: one gang, granted whole or not at all. Or of `pods`
        pods of `gpus_per_pod` GPUs each, under a node's: packed onto the cluster's base load
        block by GPU count, never bidding (where packing is enabled for the cluster)."""
        body: dict[str, Any] = {"name": name}
        for key, value in (("nodes", nodes), ("pods", pods), ("gpus_per_pod", gpus_per_pod)):
            if value is not None:
                body[key] = value
        if priority_class is not None:
            body["priority_class"] = priority_class
        if limit_price_per_gpu_hour is not None:
            body["limit_price_per_gpu_hour"] = to_decimal(limit_price_per_gpu_hour)
        return one(Call("POST", "/api/k8s/jobs", Job, body))

    @endpoint
    def jobs(self) -> Flow[list[Job]]:
        return one(Call("GET", "/api/k8s/jobs", list[Job]))

    @endpoint
    def job(self, name: str) -> Flow[Job]:
        return one(Call("GET", f"/api/k8s/jobs/{name}", Job))

    @endpoint
    def finish_job(self, name: str) -> Flow[Job]:
        """The job is done (or crashed): its nodes go idle, then back to the market."""
        return one(Call("DELETE", f"/api/k8s/jobs/{name}", Job))

    # --- base load ------------------------------------------------------------------------

    @endpoint
    def base_load_offers(self) -> Flow[Offers]:
        """The island's posted base load offers, each cell's state now and its deposit."""
        return one(Call("GET", "/api/base-load/offers", Offers))

    @endpoint
    def buy_base_load(self, size_gpus: int, term_hours: int) -> Flow[Block]:
        """Buy a posted cell for this cluster; the block starts at once."""
        body = {"size_gpus": size_gpus, "term_hours": term_hours}
        return one(Call("POST", "/api/base-load", Block, body))

    @endpoint
    def base_load(self) -> Flow[BaseLoad]:
        """The cluster's live block and its earlier ones."""
        return one(Call("GET", "/api/base-load", BaseLoad))

    # --- money ----------------------------------------------------------------------------

    @endpoint
    def set_spend_limit(self, usd_per_day: Money | None) -> Flow[SpendLimit]:
        body = {"usd_per_day": _price(usd_per_day)}
        return one(Call("PUT", "/api/spend-limit", SpendLimit, body))

    @endpoint
    def spend_limit(self) -> Flow[SpendLimit]:
        return one(Call("GET", "/api/spend-limit", SpendLimit))

    @endpoint
    def account(self) -> Flow[OwnAccount]:
        """The account's money: balance, deposits held, owed by wire, billing hold, rate and
        runway, with this cluster's spend window."""
        return one(Call("GET", "/api/account", OwnAccount))

    @endpoint
    def billing(
        self, start: str | None = None, end: str | None = None, granularity: str = "1h"
    ) -> Flow[list[BillingRow]]:
        params = {"start": start, "end": end, "granularity": granularity}
        return one(Call("GET", "/api/billing", list[BillingRow], params=params))

    @endpoint
    def receipts(
        self,
        start: str | None = None,
        end: str | None = None,
        tick: int | None = None,
        limit: int | None = None,
    ) -> Flow[list[Receipt]]:
        """Why each tick billed what it did: of `tick`, or of the ticks from `start` to `end`
        (RFC 3339), the newest `limit` (the server's default: 1,000), oldest first."""
        params = {"start": start, "end": end, "tick": tick, "limit": limit}
        return one(Call("GET", "/api/receipts", list[Receipt], params=params))


class _Operator(_Market):
    """The operator's calls (operator token): accounts, clusters, islands, manual ticks."""

    @endpoint
    def create_account(self, name: str, balance_usd: Money) -> Flow[Account]:
        body = {"name": name, "balance_usd": to_decimal(balance_usd)}
        return one(Call("POST", "/api/admin/accounts", Account, body))

    @endpoint
    def account(self, name: str) -> Flow[Account]:
        return one(Call("GET", f"/api/admin/accounts/{name}", Account))

    @endpoint
    def credit(self, name: str, amount_usd: Money) -> Flow[Account]:
        body = {"amount_usd": to_decimal(amount_usd)}
        return one(Call("POST", f"/api/admin/accounts/{name}/credit", Account, body))

    @endpoint
    def wire(self, name: str, amount_usd: Money) -> Flow[Account]:
        """Money received by wire: credit, settling the account's base load receivables."""
        body = {"amount_usd": to_decimal(amount_usd)}
        return one(Call("POST", f"/api/admin/accounts/{name}/wires", Account, body))

    @endpoint
    def create_cluster(
        self, account: str, island: str, kind: str, name: str
    ) -> Flow[ClusterCreated]:
        """A new cluster; its token is shown only in this answer."""
        body = {"account": account, "island": island, "kind": kind, "name": name}
        return one(Call("POST", "/api/admin/clusters", ClusterCreated, body))

    @endpoint
    def put_island(
        self,
        island: str,
        *,
        gpus_per_node: int | None = None,
        nodes: int | None = None,
        reserve_price: Money | None = None,
    ) -> Flow[Island]:
        """Create an island, or change its size or reserve price."""
        body = {
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "reserve_price": _price(reserve_price),
        }
        given = {k: v for k, v in body.items() if v is not None}
        return one(Call("PUT", f"/api/admin/islands/{island}", Island, given))

    @endpoint
    def post_offers(
        self,
        island: str,
        cells: Iterable[tuple[int, int, Money | None]],
        *,
        buying_open: bool,
        reservable_nodes: int,
    ) -> Flow[Offers]:
        """The island's base load offer grid: (size in GPUs, term in hours, rate per GPU-hour
        or None) cells, whether tenants may buy them, and the island's reservable nodes."""
        body = {
            "buying_open": buying_open,
            "reservable_nodes": reservable_nodes,
            "cells": [
                {"size_gpus": size, "term_hours": term, "rate_per_gpu_hour": _price(rate)}
                for size, term, rate in cells
            ],
        }
        return one(Call("PUT", f"/api/admin/islands/{island}/base-load-offers", Offers, body))

    @endpoint
    def set_packing(self, cluster: str, enabled: bool) -> Flow[Packing]:
        """Let the cluster's jobs smaller than one node be packed onto its block (or not)."""
        path = f"/api/admin/clusters/{cluster}/base-load/packing"
        return one(Call("PUT", path, Packing, {"enabled": enabled}))

    @endpoint
    def create_block(
        self, cluster: str, nodes: int, rate_per_gpu_hour: Money, term_hours: int
    ) -> Flow[Block]:
        """The account team's block: any size, term and rate within the island's cap."""
        body = {
            "nodes": nodes,
            "rate_per_gpu_hour": to_decimal(rate_per_gpu_hour),
            "term_hours": term_hours,
        }
        return one(Call("POST", f"/api/admin/clusters/{cluster}/base-load", Block, body))

    @endpoint
    def change_block(
        self,
        block: str,
        *,
        rate_per_gpu_hour: Money | None = None,
        nodes: int | None = None,
        ends_at: datetime | None = None,
        notes: str | None = None,
    ) -> Flow[Block]:
        """Change a live block: a new rate or size ends it now and answers the new block that
        carries on from this instant; the end date and notes change in place."""
        body: dict[str, Any] = {}
        if rate_per_gpu_hour is not None:
            body["rate_per_gpu_hour"] = to_decimal(rate_per_gpu_hour)
        if nodes is not None:
            body["nodes"] = nodes
        if ends_at is not None:
            body["ends_at"] = ends_at.isoformat()
        if notes is not None:
            body["notes"] = notes
        return one(Call("PATCH", f"/api/admin/base-load/{block}", Block, body))

    @endpoint
    def ticks(self, count: int = 1, island: str | None = None) -> Flow[TickReport]:
        """Run `count` ticks now (manual clock only): `island`'s statistics of the last (the
        first island's by default) and every island's."""
        body: dict[str, Any] = {"count": count}
        if island is not None:
            body["island"] = island
        return one(Call("POST", "/api/admin/ticks", TickReport, body))


class TenantClient(_AsyncApi, _Tenant):
    """A cluster's calls, awaited: `async with TenantClient(url, token) as me: await ...`."""

    def __init__(self, base_url: str, token: str, *, http: httpx.AsyncClient | None = None) -> None:
        super().__init__(base_url, token, http=http)


class SyncTenantClient(_SyncApi, _Tenant):
    """The same calls, blocking: `with SyncTenantClient(url, token) as me: me.capacity()`."""

    def __init__(self, base_url: str, token: str, *, http: httpx.Client | None = None) -> None:
        super().__init__(base_url, token, http=http)


class OperatorClient(_AsyncApi, _Operator):
    """The operator's calls (and the public market data), awaited."""


class SyncOperatorClient(_SyncApi, _Operator):
    """The operator's calls (and the public market data), blocking."""
