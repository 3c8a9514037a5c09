"""Tenant endpoints (cluster token): VM capacity, Kubernetes bid and jobs, base load, spend limit,
billing and receipts.

One router, `/api`, guarded by the cluster token (api/auth.py): each handler is handed `me`,
its cluster and the market's tenant face (market/desks/), and hands the desk the request's
contract Struct as decoded (a field left out is `msgspec.UNSET`). Handlers are sync and run in
a worker thread: every one of them touches DuckDB. Except the hot path, `PUT /api/vm/capacity`:
it stays on the event loop and awaits the store's group commit.
"""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, Router, delete, get, patch, post, put
from litestar.di import Provide
from litestar.params import FromPath, JSONBody, QueryParameter

from burstmarket.api.auth import Tokens
from burstmarket.api.dependencies import Caller, Me
from burstmarket.api.threads import threaded
from burstmarket.apidoc import SECURITY, TimeQuery, documented, refusals
from burstmarket.clock import from_datetime, parse_time
from burstmarket.contract import (
    BidChange,
    BidView,
    BillingRowView,
    BlocksView,
    BlockView,
    CapacityDeclaration,
    CapacityView,
    ClusterView,
    JobChange,
    JobView,
    NewJob,
    NewPurchase,
    OffersView,
    OwnAccountView,
    OwnLadderView,
    ReceiptView,
    SpendLimitChange,
    SpendLimitView,
)
from burstmarket.errors import (
    BidTooLow,
    BillingHold,
    BuyingClosed,
    Conflict,
    Forbidden,
    InsufficientBalance,
    Invalid,
    NotAvailable,
    NotFound,
    OffGrid,
    OnePerCluster,
    RateLimited,
    SoldOut,
    SpendLimit,
    StoreUnavailable,
    TooLarge,
    Unauthorized,
)
from burstmarket.market.desks import Tenant
from burstmarket.market.desks.billing_desk import MAX_RECEIPTS, RECEIPTS_LIMIT, Granularity
from burstmarket.market.own_ladder import OWN_RUNGS

SIGNED = (Unauthorized, Forbidden, RateLimited, StoreUnavailable)
"""What any tenant call may be refused for: the token (a VM token on a Kubernetes endpoint is
`forbidden`), its rate, the store."""
WITH_BODY = (*SIGNED, Invalid, TooLarge)


@get("/cluster", responses=refusals(*SIGNED))
@threaded
def get_cluster(me: Me) -> ClusterView:
    """The cluster this token acts for: its account, island, kind and the island's node size."""
    return me.tenant.clusters.view(me.cluster)


@get("/vm/capacity", responses=refusals(*SIGNED))
@threaded
def get_capacity(me: Me) -> CapacityView:
    """The VM cluster's declaration and what it holds."""
    return me.tenant.vm.capacity(me.cluster)


@put(
    "/vm/capacity",
    responses=refusals(*WITH_BODY, OffGrid, BidTooLow, SpendLimit, BillingHold),
)
async def put_capacity(me: Me, data: JSONBody[CapacityDeclaration]) -> CapacityView:
    """Declare how many GPUs at most, at what price at most; answered once durable. Lowering
    `max_gpus` always works."""
    return await me.tenant.vm.declare(me.cluster, data)


@get("/ladder", responses=refusals(*SIGNED, Invalid, NotFound))
@threaded
def get_ladder(
    me: Me,
    max_nodes: Annotated[
        int | None,
        QueryParameter(
            ge=1,
            le=OWN_RUNGS,
            schema_extra={"minimum": 1, "maximum": OWN_RUNGS},  # checked, and listed
            description="keep the first n rungs",
        ),
    ] = None,
) -> OwnLadderView:
    """The cluster's own ladder at its island's last tick: for n more nodes, the lowest price
    at which the next tick grants them if nothing else changed, its own demand left out."""
    return me.tenant.ladder.own(me.cluster, max_nodes)


@get("/k8s/bid", responses=refusals(*SIGNED))
@threaded
def get_bid(me: Me) -> BidView:
    """The Kubernetes cluster's limit price."""
    return me.tenant.jobs.bid(me.cluster)


@put("/k8s/bid", responses=refusals(*WITH_BODY, BidTooLow, SpendLimit))
@threaded
def put_bid(me: Me, data: JSONBody[BidChange]) -> BidView:
    """Set the limit price of the cluster's jobs that have none of their own."""
    return me.tenant.jobs.set_bid(me.cluster, data)


@post(
    "/k8s/jobs",
    status_code=201,
    responses=refusals(*WITH_BODY, Conflict, BidTooLow, SpendLimit, BillingHold),
)
@threaded
def post_job(me: Me, data: JSONBody[NewJob]) -> JobView:
    """A job of `nodes` whole nodes, placed as one gang; or of `pods` pods of `gpus_per_pod`
    GPUs under a node's, packed onto the cluster's base load block (never bidding)."""
    return me.tenant.jobs.create(me.cluster, data)


@get("/k8s/jobs", responses=refusals(*SIGNED))
@threaded
def get_jobs(me: Me) -> list[JobView]:
    return me.tenant.jobs.jobs(me.cluster)


@get("/k8s/jobs/{job:str}", responses=refusals(*SIGNED, NotFound))
@threaded
def get_job(me: Me, job: FromPath[str]) -> JobView:
    return me.tenant.jobs.job(me.cluster, job)


@patch(
    "/k8s/jobs/{job:str}",
    responses=refusals(*WITH_BODY, NotFound, Conflict, BidTooLow, SpendLimit),
)
@threaded
def patch_job(me: Me, job: FromPath[str], data: JSONBody[JobChange]) -> JobView:
    """Change a job's limit price or priority class (a field left out is kept)."""
    return me.tenant.jobs.patch(me.cluster, job, data)


@delete("/k8s/jobs/{job:str}", status_code=200, responses=refusals(*SIGNED, NotFound))
@threaded
def delete_job(me: Me, job: FromPath[str]) -> JobView:
    """The job finished: its nodes stay with the cluster, idle."""
    return me.tenant.jobs.finish(me.cluster, job)


@get("/base-load/offers", responses=refusals(*SIGNED))
@threaded
def get_offers(me: Me) -> OffersView:
    """The island's posted base load offers, each cell's state now and the deposit it would
    take from this account."""
    return me.tenant.base_load.offers(me.cluster)


@post(
    "/base-load",
    status_code=201,
    responses=refusals(
        *WITH_BODY, OnePerCluster, SoldOut, NotAvailable, BuyingClosed, InsufficientBalance
    ),
)
@threaded
def post_purchase(me: Me, data: JSONBody[NewPurchase]) -> BlockView:
    """Buy a posted cell for this cluster: the block starts at once. The balance covers the
    whole price, or a security deposit (the price up to 10,000 USD) is taken from it and the
    rest is owed by wire by the next business day."""
    return me.tenant.base_load.buy(me.cluster, data)


@get("/base-load", responses=refusals(*SIGNED))
@threaded
def get_blocks(me: Me) -> BlocksView:
    """The cluster's live base load block and its earlier ones."""
    return me.tenant.base_load.blocks_of(me.cluster)


@get("/spend-limit", responses=refusals(*SIGNED))
@threaded
def get_spend_limit(me: Me) -> SpendLimitView:
    return me.tenant.spend_guard.limit(me.cluster)


@put("/spend-limit", responses=refusals(*WITH_BODY))
@threaded
def put_spend_limit(me: Me, data: JSONBody[SpendLimitChange]) -> SpendLimitView:
    """Set the cluster's dollar limit per day (null removes it)."""
    return me.tenant.spend_guard.set_limit(me.cluster, data)


@get("/account", responses=refusals(*SIGNED))
@threaded
def get_account(me: Me) -> OwnAccountView:
    """The account's money as this cluster reads it: balance, base load deposits held and
    owed by wire, billing hold, this cluster's spend window, the account's rate and runway."""
    return me.tenant.account.account(me.cluster)


def _time(field: str, value: str | None) -> int | None:
    return None if value is None else from_datetime(parse_time(field, value))


CSV_COLUMNS = ["start", "end", "gpu_hours", "amount_usd", "kind"]


@get(
    "/billing",
    responses=refusals(*SIGNED, Invalid),
    operation_class=documented(also={"text/csv": "the rows as CSV: " + ",".join(CSV_COLUMNS)}),
)
@threaded
def get_billing(
    me: Me,
    start: TimeQuery = None,
    end: TimeQuery = None,
    granularity: Annotated[Granularity, QueryParameter()] = "1h",
    output: Annotated[Literal["json", "csv"], QueryParameter(name="format")] = "json",
) -> Response[list[BillingRowView]]:
    """The cluster's bill per time bucket, computed in SQL over the ledger."""
    rows = me.tenant.billing.billing(
        me.cluster, _time("start", start), _time("end", end), granularity
    )
    if output == "json":
        return Response(rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(msgspec.to_builtins(rows))
    return Response(buffer.getvalue(), media_type="text/csv")  # type: ignore[arg-type]


@get("/receipts", responses=refusals(*SIGNED, Invalid))
@threaded
def get_receipts(
    me: Me,
    start: TimeQuery = None,
    end: TimeQuery = None,
    tick: Annotated[
        int | None, QueryParameter(ge=1, description="one tick instead of a range of times")
    ] = None,
    limit: Annotated[
        int, QueryParameter(ge=1, le=MAX_RECEIPTS, description="the newest this many")
    ] = RECEIPTS_LIMIT,
) -> list[ReceiptView]:
    """Why each tick billed the cluster what it did for its market nodes: the payment in parts
    (reserve, displaced, core, protected) adding up to the amount, with the demand behind each
    as price levels × nodes (docs/market.md "Receipts"). Oldest first."""
    return me.tenant.billing.receipts(
        me.cluster, _time("start", start), _time("end", end), tick, limit
    )


def router(tokens: Tokens, tenant: Tenant) -> Router:
    """Every tenant endpoint under `/api`, behind the cluster-token guard, each handed `me`."""

    def me(request: Request[Any, Any, Any]) -> Caller:
        return Caller(request.state.cluster, tenant)

    return Router(
        "/api",
        route_handlers=[
            get_cluster,
            get_capacity,
            put_capacity,
            get_ladder,
            get_bid,
            put_bid,
            post_job,
            get_jobs,
            get_job,
            patch_job,
            delete_job,
            get_offers,
            post_purchase,
            get_blocks,
            get_spend_limit,
            put_spend_limit,
            get_account,
            get_billing,
            get_receipts,
        ],
        guards=[tokens.cluster],
        tags=["tenant (cluster token)"],
        dependencies={"me": Provide(me, sync_to_thread=False)},
        security=SECURITY,
    )
