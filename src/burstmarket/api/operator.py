"""Operator endpoints (operator token): accounts, credit, clusters, islands, node actions
(cordon, dark, uncordon), base load blocks, manual ticks; and the public island list.

Every operator endpoint is on one router, `/api/admin`, guarded by the operator token
(api/auth.py): a handler here never checks a token itself. Each hands the market's operator face
(market/desks/) the request's contract Struct as decoded.
"""

from __future__ import annotations

import anyio.to_thread
import msgspec
from litestar import Router, get, patch, post, put
from litestar.params import FromPath, JSONBody

from burstmarket.api.auth import Tokens
from burstmarket.api.dependencies import Deps
from burstmarket.api.errors import refusal_for
from burstmarket.api.threads import threaded
from burstmarket.apidoc import MARKET_DATA, SECURITY, refusals
from burstmarket.clock import ManualClock
from burstmarket.contract import (
    AccountView,
    BlockChange,
    BlockView,
    ClusterCreatedView,
    Credit,
    IslandChange,
    IslandView,
    NewAccount,
    NewBlock,
    NewCluster,
    NodeView,
    OfferGrid,
    OffersView,
    PackingChange,
    PackingView,
    TickRequest,
    TicksRun,
    Wire,
)
from burstmarket.errors import (
    Conflict,
    Forbidden,
    Invalid,
    ManualClockOnly,
    MarketError,
    NotFound,
    OnePerCluster,
    StoreUnavailable,
    TooLarge,
    Unauthorized,
)
from burstmarket.events import TickCommitted

SIGNED = (Unauthorized, Forbidden, StoreUnavailable)
WITH_BODY = (*SIGNED, Invalid, TooLarge)


@get("/api/islands", responses=refusals(StoreUnavailable), tags=[MARKET_DATA])
@threaded
def get_islands(deps: Deps) -> list[IslandView]:
    """Every island (public, like the market data)."""
    return deps.operator.islands.islands()


@post("/accounts", status_code=201, responses=refusals(*WITH_BODY, Conflict))
@threaded
def post_account(deps: Deps, data: JSONBody[NewAccount]) -> AccountView:
    return deps.operator.accounts.create(data)


@get("/accounts/{name:str}", responses=refusals(*SIGNED, NotFound))
@threaded
def get_account(deps: Deps, name: FromPath[str]) -> AccountView:
    return deps.operator.accounts.account(name)


@post("/accounts/{name:str}/credit", status_code=200, responses=refusals(*WITH_BODY, NotFound))
@threaded
def post_credit(deps: Deps, name: FromPath[str], data: JSONBody[Credit]) -> AccountView:
    """Add credit (negative corrects it): a new ledger row, never an edit."""
    return deps.operator.accounts.credit(name, data)


@post("/accounts/{name:str}/wires", status_code=200, responses=refusals(*WITH_BODY, NotFound))
@threaded
def post_wire(deps: Deps, name: FromPath[str], data: JSONBody[Wire]) -> AccountView:
    """Money received by wire: credit, applied to the account's base load receivables (the
    earliest due first); one paid in full gives its security deposit back."""
    return deps.operator.accounts.wire(name, data)


@post("/clusters", status_code=201, responses=refusals(*WITH_BODY, NotFound, Conflict))
@threaded
def post_cluster(deps: Deps, data: JSONBody[NewCluster]) -> ClusterCreatedView:
    """A cluster of an account on an island; its token is shown here, once."""
    _runs(deps, data.island)
    return deps.operator.clusters.create(data)


def _runs(deps: Deps, island: str) -> None:
    """An island another market process runs (`serve --islands`) is not this one's to change."""
    if not deps.market.runs(island):
        raise NotFound(f"island {island!r} is not run by this process (--islands)", island=island)


@put("/islands/{island_id:str}", responses=refusals(*WITH_BODY, NotFound, Conflict))
@threaded
def put_island(deps: Deps, island_id: FromPath[str], data: JSONBody[IslandChange]) -> IslandView:
    """Create an island or change it."""
    _runs(deps, island_id)
    return deps.operator.islands.put(island_id, data)


@get("/islands/{island_id:str}/nodes", responses=refusals(*SIGNED, NotFound))
@threaded
def get_nodes(deps: Deps, island_id: FromPath[str]) -> list[NodeView]:
    """Every node of the island: free, held, base_load, cordoned or dark."""
    return deps.operator.nodes.nodes(island_id)


NODE_ACTION = refusals(*SIGNED, NotFound)


@post("/islands/{island_id:str}/nodes/{node_id:str}/cordon", status_code=200, responses=NODE_ACTION)
@threaded
def post_cordon(deps: Deps, island_id: FromPath[str], node_id: FromPath[str]) -> NodeView:
    """Out of service (health check): billing stops at once; inside a window the cluster is
    owed a replacement, granted ahead of bids, that inherits the window at the locked price."""
    return deps.operator.nodes.act(island_id, node_id, "cordon")


@post("/islands/{island_id:str}/nodes/{node_id:str}/dark", status_code=200, responses=NODE_ACTION)
@threaded
def post_dark(deps: Deps, island_id: FromPath[str], node_id: FromPath[str]) -> NodeView:
    """Kubelet lost: like cordon; inside a window a replacement is owed for its rest."""
    return deps.operator.nodes.act(island_id, node_id, "dark")


@post(
    "/islands/{island_id:str}/nodes/{node_id:str}/uncordon", status_code=200, responses=NODE_ACTION
)
@threaded
def post_uncordon(deps: Deps, island_id: FromPath[str], node_id: FromPath[str]) -> NodeView:
    """Back in service: the node returns to its cluster as idle capacity (or is free)."""
    return deps.operator.nodes.act(island_id, node_id, "uncordon")


@post(
    "/clusters/{cluster_id:str}/base-load",
    status_code=201,
    responses=refusals(*WITH_BODY, NotFound, OnePerCluster),
)
@threaded
def post_base_load(deps: Deps, cluster_id: FromPath[str], data: JSONBody[NewBlock]) -> BlockView:
    """The account team's tool: a base load block for a Kubernetes cluster at any size, term
    and rate within the island's `base_load_cap`, with no posted offer, reserve or funds asked
    (tenants buy posted cells with `POST /api/base-load`). One live block per cluster
    (`one-per-cluster`)."""
    return deps.operator.base_load.create(cluster_id, data)


@patch("/base-load/{block_id:str}", responses=refusals(*WITH_BODY, NotFound, Conflict))
@threaded
def patch_base_load(deps: Deps, block_id: FromPath[str], data: JSONBody[BlockChange]) -> BlockView:
    """Change a live block (the account team): a new rate or size ends it now and starts a new
    block with the new figures, billed exactly on both sides of the instant (the answer is the
    new block); the end date and the notes change in place."""
    return deps.operator.base_load.change(block_id, data)


@put("/clusters/{cluster_id:str}/base-load/packing", responses=refusals(*WITH_BODY, NotFound))
@threaded
def put_packing(
    deps: Deps, cluster_id: FromPath[str], data: JSONBody[PackingChange]
) -> PackingView:
    """Enable (or disable) packing the cluster's jobs smaller than one node onto its block."""
    return deps.operator.base_load.set_packing(cluster_id, data)


@put("/islands/{island_id:str}/base-load-offers", responses=refusals(*WITH_BODY, NotFound))
@threaded
def put_offers(deps: Deps, island_id: FromPath[str], data: JSONBody[OfferGrid]) -> OffersView:
    """Post the island's base load offer grid, as a whole: whether tenants may buy, the
    reservable inventory (the island's `base_load_cap`) and the cells (a cell without a rate
    reads sold out). Answers the grid with each cell's state now."""
    return deps.operator.base_load.post_offers(island_id, data)


@get("/clusters/{cluster_id:str}/base-load", responses=refusals(*SIGNED, NotFound))
@threaded
def get_base_load(deps: Deps, cluster_id: FromPath[str]) -> list[BlockView]:
    """The cluster's base load blocks, newest first."""
    return deps.operator.base_load.blocks(cluster_id)


@post("/ticks", status_code=200, responses=refusals(*WITH_BODY, ManualClockOnly))
async def post_ticks(deps: Deps, data: JSONBody[TickRequest]) -> TicksRun:
    """Run `count` ticks back to back, each one interval after market time (the manual clock's,
    moved by each tick that commits)."""
    clock = deps.clock
    if not isinstance(clock, ManualClock):
        raise ManualClockOnly(
            "ticks run on the real clock's schedule; POST /api/admin/ticks needs --clock manual"
        )
    market = deps.market
    islands = await anyio.to_thread.run_sync(market.island_ids)
    if data.island is not None and data.island not in islands:
        raise Invalid("island", "no such island", island=data.island)
    if not islands:
        raise Invalid("island", "this process runs no island yet")
    last: dict[str, TickCommitted] = {}
    async with deps.tick_lock:
        for _ in range(data.count):
            # market time reaches `at` only once a tick at `at` commits (ManualClock.ticked)
            at = clock.now_ns() + market.interval_ns
            for island in islands:
                try:
                    event = await anyio.to_thread.run_sync(market.tick, island, at)
                except Exception as exc:
                    partway = _partway(exc, island, last)
                    if partway is None:
                        raise
                    raise partway from exc
                market.publish(event)
                last[island] = event
    shown = msgspec.structs.asdict(last[data.island or islands[0]].stats)
    return TicksRun(**shown, islands=[last[i].stats for i in islands])


def _partway(exc: Exception, island: str, last: dict[str, TickCommitted]) -> MarketError | None:
    """A refusal partway through a request (a store fault is one: `refusal_for`), once some
    ticks committed: those (`committed`, island -> its last tick) stand, and the
    answer says so rather than that nothing changed. None: nothing committed yet, or a bug."""
    refusal = refusal_for(exc)
    if refusal is None or not last:
        return None
    refusal.detail = (
        f"island {island}: {refusal.detail}; the ticks in `committed` ran before it and stand"
    )
    refusal.figures["committed"] = {name: event.tick for name, event in last.items()}
    return refusal


def admin_router(tokens: Tokens) -> Router:
    """Every operator endpoint under `/api/admin`, behind the operator-token guard."""
    return Router(
        "/api/admin",
        route_handlers=[
            post_account,
            get_account,
            post_credit,
            post_wire,
            post_cluster,
            put_island,
            get_nodes,
            post_cordon,
            post_dark,
            post_uncordon,
            post_base_load,
            get_base_load,
            patch_base_load,
            put_packing,
            put_offers,
            post_ticks,
        ],
        guards=[tokens.operator],
        tags=["operator (operator token)"],
        security=SECURITY,
    )
