"""The feed's bus and the islands' leases against a real redis-server (tests/conftest.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from burstmarket.feed.bus import Bus
from burstmarket.feed.catalog import FeedSpec, load_catalog
from burstmarket.feed.messages import Row
from burstmarket.feed.publisher import BusPublisher
from burstmarket.lease import Leases, LeaseUnavailable
from tests.conftest import RedisServer
from tests.feed.support import START, TICK

pytestmark = pytest.mark.e2e  # starts redis-server

STATS = next(spec for spec in load_catalog() if spec.name == "stats")


def row(tick: int, island: str = "east") -> Row:
    return Row(
        STATS.channel_for(island),
        island,
        tick,
        START + tick * TICK,
        {"vwap": 2.5 + tick / 100, "gpus": tick},
    )


def run(coroutine: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coroutine())


def test_a_channel_holds_each_tick_once_in_order_with_the_markets_bytes(
    redis_server: RedisServer,
) -> None:
    async def scenario() -> None:
        bus = Bus(redis_server.url)
        try:
            sent = [row(1), row(2)]
            await bus.append((r, 100) for r in sent)
            # Again, and an older one: Redis refuses both (IDs only grow); nothing changes.
            await bus.append([(row(2), 100), (row(1), 100)])
            got = await bus.rows(STATS.channel_for("east"), "east", 1, 10)
            assert [r.tick for r in got] == [1, 2]
            assert [r.update for r in got] == [r.update for r in sent]  # byte for byte
            assert (await bus.top("stats:east"), await bus.oldest("stats:east")) == (2, 1)
            assert await bus.channels() == {"stats:east"}
            latest = await bus.latest("stats:east", "east")
            assert latest is not None
            assert (latest.tick, latest.data, latest.time) == (2, sent[1].data, sent[1].time)
            assert latest.snapshot == sent[1].snapshot
            followed = await bus.follow({"stats:east": 1}, lambda _: "east", 10, 10)
            assert [r.tick for r in followed] == [2]
            # Trimmed to the length asked for (approximately: never below it).
            await bus.append((row(n), 3) for n in range(3, 400))
            assert 3 <= len(await bus.rows("stats:east", "east", 1, 400)) < 397
        finally:
            await bus.close()

    run(scenario)


class Store:
    """What a market's store answers the publisher: every tick up to `latest`."""

    def __init__(self, latest: int) -> None:
        self.latest = latest
        self.reads: list[tuple[int, int]] = []

    async def read(self, spec: FeedSpec, island: str, first: int, last: int) -> list[Row]:
        self.reads.append((first, last))
        return [row(tick, island) for tick in range(first, min(last, self.latest) + 1)]


async def ticks_on(bus: Bus) -> list[int]:
    return [r.tick for r in await bus.rows("stats:east", "east", 0, 10_000)]


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    for _ in range(300):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never")


def test_the_publisher_sends_what_the_bus_missed_from_the_store(
    redis_server: RedisServer,
) -> None:
    async def scenario() -> None:
        bus = Bus(redis_server.url)
        store = Store(latest=5)
        await bus.append([(row(1), 1000), (row(2), 1000)])
        stats_only = (STATS,)
        publisher = BusPublisher(bus, stats_only, 10, store.read, lambda: {"east": store.latest})
        task = asyncio.create_task(publisher.run())
        try:
            # At start: the store's ticks past the bus's (3..5).
            await eventually(lambda: _has(bus, [1, 2, 3, 4, 5]))
            assert store.reads == [(3, 5)]
            # A live tick past a gap: the missing one first, from the store.
            store.latest = 7
            publisher.offer(STATS, row(7))
            await eventually(lambda: _has(bus, [1, 2, 3, 4, 5, 6, 7]))
            # Redis goes (and comes back empty): live ticks meanwhile are dropped, and then
            # the store's window is published again, in order.
            redis_server.stop()
            store.latest = 9
            publisher.offer(STATS, row(8))
            publisher.offer(STATS, row(9))
            await asyncio.sleep(1)
            redis_server.start()
            await eventually(lambda: _has(bus, list(range(1, 10))))
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await bus.close()

    run(scenario)


async def _has(bus: Bus, ticks: list[int]) -> bool:
    try:
        return await ticks_on(bus) == ticks
    except Exception:  # Redis not back yet
        return False


def test_an_island_has_one_owner_and_a_lapsed_lease_another(redis_server: RedisServer) -> None:
    first = Leases(redis_server.url, ["north", "south"], 60, "first")
    second = Leases(redis_server.url, ["south"], 0.5, "second")
    first.claim()
    with pytest.raises(LeaseUnavailable, match=r"island south is run by another process \(first\)"):
        second.claim()
    lost: list[str] = []
    first.renew(lost.append)
    assert lost == []
    # Redis restarts empty: the owner claims its islands again at the next renewal.
    redis_server.stop()
    first.renew(lost.append)  # Redis away: logged, nothing lost
    redis_server.start()
    first.renew(lost.append)
    assert lost == []
    with pytest.raises(LeaseUnavailable):
        Leases(redis_server.url, ["north"], 1, "third").claim()
    # Released at a clean stop: the next owner need not wait.
    first.release()
    second = Leases(redis_server.url, ["south"], 0.5, "second")
    second.claim()
    # An owner whose lease lapsed and was taken is told so.
    late = Leases(redis_server.url, ["south"], 0.5, "late")
    time.sleep(0.8)  # past the lease's 0.5 s
    late.claim()
    second.renew(lost.append)
    assert lost == ["south"]
    late.release()
    second.release()


def test_without_redis_no_lease_and_one_line(redis_server: RedisServer) -> None:
    redis_server.stop()
    with pytest.raises(LeaseUnavailable, match="the bus does not answer"):
        Leases(redis_server.url, ["north"], 1, "x").claim()
