"""burstmarket.client against a real server: the tenant calls, refusals, ladder-aware bidding."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from burstmarket.client import OperatorClient, Refused, TenantClient, price_to_win
from tests.conftest import Server, StartServer

T = TypeVar("T")


def arun(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


async def new_cluster(op: OperatorClient, island: str, kind: str, name: str) -> TenantClient:
    created = await op.create_cluster("acct", island, kind, name)
    return TenantClient(op.base_url, created["token"])


@pytest.mark.e2e
def test_declare_read_and_refusals(server: Server) -> None:
    async def scenario() -> None:
        async with OperatorClient(server.url, server.token) as op:
            await op.put_island("small", gpus_per_node=8, nodes=4, reserve_price=1.5)
            await op.create_account("acct", 1000)
            async with await new_cluster(op, "small", "vm", "vm-a") as me:
                with pytest.raises(Refused) as off_grid:
                    await me.declare(12, 2.0)
                assert off_grid.value.status == 422
                assert off_grid.value.code == "off-grid"
                assert off_grid.value.figures["gpus_per_node"] == 8
                with pytest.raises(Refused) as too_low:
                    await me.declare(16, 1.25)
                assert too_low.value.code == "bid-too-low"
                declared = await me.declare(16, 2.0)
                assert (declared["max_gpus"], declared["pending_gpus"]) == (16, 16)
                stats = await op.ticks(1)
                assert stats["islands"][-1]["island"] == "small"
                capacity = await me.capacity()
                assert capacity["held_gpus"] == 16
                assert capacity["rate"] == 1.5  # uncontested: the reserve
                shrunk = await me.declare(8, 2.0, release=[capacity["nodes"][0]["id"]])
                assert shrunk["held_gpus"] == 8
                assert capacity["nodes"][0]["id"] not in {n["id"] for n in shrunk["nodes"]}

    arun(scenario)


@pytest.mark.e2e
def test_ladder_aware_bidding_wins_the_nodes_it_asks_for(start_server: StartServer) -> None:
    # 30-minute ticks: the holder's 1-hour windows lapse after two ticks, so its nodes compete
    server = start_server("--clock", "manual", "--tick-seconds", "1800")

    async def scenario() -> None:
        async with OperatorClient(server.url, server.token) as op:
            await op.put_island("lad", gpus_per_node=8, nodes=4, reserve_price=1.0)
            await op.create_account("acct", 10_000)
            holder = await new_cluster(op, "lad", "vm", "holder")
            await holder.declare(32, 2.0)
            await op.ticks(3)
            ladder = await holder.ladder("lad")
            # to take 2 of the holder's nodes a newcomer must beat its 2.0 (ties go to the older)
            assert price_to_win(ladder, 2) == 2.0001
            assert price_to_win(ladder, 5) is None
            newcomer = await new_cluster(op, "lad", "vm", "newcomer")
            declared = await newcomer.declare_to_win(2, ceiling=3.0)
            assert declared["max_price_per_gpu_hour"] == round(2.0001 * 1.1, 4)
            await op.ticks(1)
            won = await newcomer.capacity()
            assert won["held_gpus"] == 16
            assert 1.0 <= won["rate"] <= declared["max_price_per_gpu_hour"]
            assert (await holder.capacity())["held_gpus"] == 16
            await holder.aclose()
            await newcomer.aclose()

    arun(scenario)


@pytest.mark.e2e
def test_kubernetes_jobs_run_and_finish(server: Server) -> None:
    async def scenario() -> None:
        async with OperatorClient(server.url, server.token) as op:
            await op.create_account("acct", 1000)
            async with await new_cluster(op, "ref", "k8s", "kube") as me:
                assert (await me.set_bid(2.5))["limit_price_per_gpu_hour"] == 2.5
                job = await me.submit_job("train-1", 2, priority_class="batch")
                assert job["state"] == "pending"
                await op.ticks(1)
                running = await me.job("train-1")
                assert running["state"] == "running"
                assert len(running["node_ids"]) == 2
                assert "Provisioned" in {e["type"] for e in running["events"]}
                finished = await me.finish_job("train-1")
                assert finished["state"] == "finished"
                assert [j["name"] for j in await me.jobs()] == ["train-1"]
                limit = await me.set_spend_limit(100)
                assert limit["usd_per_day"] == 100

    arun(scenario)
