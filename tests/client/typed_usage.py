"""Code written against the client the way a tenant writes it, with its types spelled out.

tests/client/test_client.py runs these functions against a real server, and type-checks this
file with `mypy --strict`: the answers are typed (Structs, Decimal prices, datetimes), the
synchronous twin returns what the async client awaits.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from burstmarket.client import (
    Capacity,
    Ladder,
    OperatorClient,
    Rung,
    Stats,
    SyncOperatorClient,
    SyncTenantClient,
    TenantClient,
    TickReport,
)


def one_more_node(url: str, token: str, ceiling: Decimal) -> Capacity:
    """Blocking: hold one node more than now, bidding what the ladder says it takes."""
    with SyncTenantClient(url, token) as me:
        capacity: Capacity = me.capacity()
        held: int = capacity.held_gpus // capacity.gpus_per_node
        return me.declare_to_win(held + 1, ceiling)


async def one_more_node_async(url: str, token: str, ceiling: Decimal) -> Capacity:
    """The same, awaited."""
    async with TenantClient(url, token) as me:
        capacity: Capacity = await me.capacity()
        held: int = capacity.held_gpus // capacity.gpus_per_node
        return await me.declare_to_win(held + 1, ceiling)


def rungs(url: str, token: str, island: str) -> list[tuple[int, Decimal, datetime | None, str]]:
    """Each rung's node count, price, when it can be contested and why not now, in words."""
    with SyncTenantClient(url, token) as me:
        ladder: Ladder = me.ladder(island)
        shown: list[tuple[int, Decimal, datetime | None, str]] = []
        for rung in ladder.rungs:
            price: Decimal = rung.price_per_gpu_hour
            when: datetime | None = rung.contestable_at
            shown.append((rung.nodes, price, when, rung.reason or "contestable now"))
        found: Rung | None = ladder.rung(len(ladder.rungs) + 1)
        assert found is None  # past every node the island could free
        return shown


def run_ticks(url: str, token: str, count: int, island: str) -> tuple[TickReport, list[Stats]]:
    with SyncOperatorClient(url, token) as operator:
        report: TickReport = operator.ticks(count, island=island)
        return report, report.islands


async def vwap(url: str, token: str, island: str) -> Decimal | None:
    async with OperatorClient(url, token) as operator:
        stats: Stats = await operator.stats(island)
        return stats.vwap
