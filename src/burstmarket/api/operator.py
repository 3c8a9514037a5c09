"""Operator endpoints (operator token): accounts, credit, clusters, islands, node actions
(cordon, dark, uncordon), base load blocks, manual ticks; and the public island list."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import msgspec
from litestar import Request, get, post, put

from burstmarket.api.auth import require_operator
from burstmarket.api.bodies import (
    BaseLoadBody,
    Credit,
    IslandBody,
    NewAccount,
    NewCluster,
    Ticks,
    amount,
    decode,
    node_spec,
    optional_price,
    price,
)
from burstmarket.api.services import Services
from burstmarket.api.threads import threaded
from burstmarket.apidoc import documented
from burstmarket.clock import ManualClock
from burstmarket.errors import Invalid, ManualClockOnly
from burstmarket.events import TickCommitted

AnyRequest = Request[Any, Any, Any]
Json = dict[str, Any]
MAX_TICKS = 100_000


def _operator(request: AnyRequest, services: Services) -> None:
    require_operator(request, services.market, services.settings.operator_token)


@get("/api/islands")
@threaded
def get_islands(services: Services) -> list[Json]:
    return services.operator.islands()


@post("/api/admin/accounts", status_code=201, operation_class=documented(NewAccount))
@threaded
def post_account(request: AnyRequest, services: Services, body: bytes) -> Json:
    _operator(request, services)
    data = decode(body, NewAccount)
    return services.operator.create_account(data.name, amount("balance_usd", data.balance_usd))


@get("/api/admin/accounts/{name:str}")
@threaded
def get_account(request: AnyRequest, services: Services, name: str) -> Json:
    _operator(request, services)
    return services.operator.account(name)


@post("/api/admin/accounts/{name:str}/credit", status_code=200, operation_class=documented(Credit))
@threaded
def post_credit(request: AnyRequest, services: Services, name: str, body: bytes) -> Json:
    _operator(request, services)
    data = decode(body, Credit)
    return services.operator.credit(name, amount("amount_usd", data.amount_usd))


@post("/api/admin/clusters", status_code=201, operation_class=documented(NewCluster))
@threaded
def post_cluster(request: AnyRequest, services: Services, body: bytes) -> Json:
    _operator(request, services)
    data = decode(body, NewCluster)
    return services.operator.create_cluster(data.account, data.island, data.kind, data.name)


@put("/api/admin/islands/{island_id:str}", operation_class=documented(IslandBody))
@threaded
def put_island(request: AnyRequest, services: Services, island_id: str, body: bytes) -> Json:
    _operator(request, services)
    data = decode(body, IslandBody)
    set_spec = data.node_spec is not msgspec.UNSET
    return services.operator.put_island(
        island_id,
        data.gpus_per_node,
        data.nodes,
        optional_price("reserve_price", data.reserve_price),
        node_spec(data.node_spec) if set_spec else None,
        set_spec,
        data.base_load_cap,
    )


@get("/api/admin/islands/{island_id:str}/nodes")
@threaded
def get_nodes(request: AnyRequest, services: Services, island_id: str) -> list[Json]:
    """Every node of the island: free, held, base_load, cordoned or dark."""
    _operator(request, services)
    return services.operator.nodes.nodes(island_id)


def _node_action(
    request: AnyRequest, services: Services, island_id: str, node_id: str, action: str
) -> Json:
    _operator(request, services)
    return services.operator.nodes.act(island_id, node_id, action)


@post("/api/admin/islands/{island_id:str}/nodes/{node_id:str}/cordon", status_code=200)
@threaded
def post_cordon(request: AnyRequest, services: Services, island_id: str, node_id: str) -> Json:
    """Out of service (health check): billing stops at once; inside a window the cluster is
    owed a replacement, granted ahead of bids, that inherits the window at the locked price."""
    return _node_action(request, services, island_id, node_id, "cordon")


@post("/api/admin/islands/{island_id:str}/nodes/{node_id:str}/dark", status_code=200)
@threaded
def post_dark(request: AnyRequest, services: Services, island_id: str, node_id: str) -> Json:
    """Kubelet lost: like cordon; inside a window a replacement is owed for its rest."""
    return _node_action(request, services, island_id, node_id, "dark")


@post("/api/admin/islands/{island_id:str}/nodes/{node_id:str}/uncordon", status_code=200)
@threaded
def post_uncordon(request: AnyRequest, services: Services, island_id: str, node_id: str) -> Json:
    """Back in service: the node returns to its cluster as idle capacity (or is free)."""
    return _node_action(request, services, island_id, node_id, "uncordon")


@post(
    "/api/admin/clusters/{cluster_id:str}/base-load",
    status_code=201,
    operation_class=documented(BaseLoadBody),
)
@threaded
def post_base_load(request: AnyRequest, services: Services, cluster_id: str, body: bytes) -> Json:
    """A base load block for a Kubernetes cluster: one live block per cluster
    (`one-per-cluster`), within the island's `base_load_cap`."""
    _operator(request, services)
    data = decode(body, BaseLoadBody)
    rate = price("rate_per_gpu_hour", data.rate_per_gpu_hour)
    return services.operator.base_load.create(cluster_id, data.nodes, rate, data.term_hours)


@get("/api/admin/clusters/{cluster_id:str}/base-load")
@threaded
def get_base_load(request: AnyRequest, services: Services, cluster_id: str) -> list[Json]:
    """The cluster's base load blocks, newest first."""
    _operator(request, services)
    return services.operator.base_load.blocks(cluster_id)


@post("/api/admin/ticks", status_code=200, operation_class=documented(Ticks))
async def post_ticks(request: AnyRequest, services: Services, body: bytes) -> Json:
    """Run `count` ticks back to back, each advancing the manual clock by one interval."""
    await anyio.to_thread.run_sync(_operator, request, services)
    clock = services.clock
    if not isinstance(clock, ManualClock):
        raise ManualClockOnly(
            "ticks run on the real clock's schedule; POST /api/admin/ticks needs --clock manual"
        )
    data = decode(body, Ticks)
    if not 1 <= data.count <= MAX_TICKS:
        raise Invalid("count", f"must be between 1 and {MAX_TICKS}", count=data.count)
    market = services.market
    islands = await anyio.to_thread.run_sync(market.island_ids)
    if data.island is not None and data.island not in islands:
        raise Invalid("island", "no such island", island=data.island)
    last: dict[str, TickCommitted] = {}
    async with services.tick_lock:
        for _ in range(data.count):
            now = clock.advance(market.interval_ns)
            for island in islands:
                event = await anyio.to_thread.run_sync(market.tick, island, now)
                market.publish(event)
                last[island] = event
    shown = data.island or islands[0]
    return {**last[shown].stats, "islands": [last[i].stats for i in islands]}


ROUTES = [
    get_islands,
    post_account,
    get_account,
    post_credit,
    post_cluster,
    put_island,
    get_nodes,
    post_cordon,
    post_dark,
    post_uncordon,
    post_base_load,
    get_base_load,
    post_ticks,
]
