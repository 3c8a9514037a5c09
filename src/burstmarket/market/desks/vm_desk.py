"""VM capacity (`GET` and `PUT /api/vm/capacity`): a VM cluster declares how many GPUs at most,
at what price at most, and reads what it holds.

A declaration is the hot path: a job of the store's group commit on the in-memory copy of what
it reads (market/hot.py), answered once durable. It runs in named steps: the declaration's own
checks, what it changes of the holdings, the spend guard's checks, then the changes staged for
the batch. One that changes held nodes while the island's tick is in flight waits for that tick
and runs again (market/runner.py)."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import dataclass

from burstmarket.clock import maybe_datetime
from burstmarket.contract import CapacityDeclaration, CapacityView, HeldNodeView
from burstmarket.errors import Invalid, OffGrid
from burstmarket.market.desks.clusters_desk import check_kind
from burstmarket.market.desks.inputs import optional_price
from burstmarket.market.desks.spend_guard import SpendGuard, recommitted
from burstmarket.market.guard import outgrown
from burstmarket.market.ledger import scale_down
from burstmarket.market.lookups import cluster_nodes, read_cluster_and_island
from burstmarket.market.market import Market
from burstmarket.market.model import Cluster, Island, Node, newest_first, resized
from burstmarket.market.pending_view import pending_detail_view
from burstmarket.money import maybe_usd
from burstmarket.store import Batch
from burstmarket.store.journal import Unrecorded
from burstmarket.store.rows import Cursor


@dataclass(frozen=True, slots=True)
class Declaration:
    """A declaration's figures: GPUs at most, µUSD per GPU-hour at most, held nodes to give
    back first."""

    max_gpus: int
    max_price: int | None
    release: list[str]


@dataclass(frozen=True, slots=True)
class Change:
    """What a declaration changes of a cluster's holdings, decided before anything is staged."""

    want: int
    """Nodes declared now."""
    declared: int
    """Nodes declared before."""
    gone: list[Node]
    """Held nodes released at once (a scale-down)."""
    kept: list[Node]
    raised: list[int]
    """For each kept node, what the new ceiling adds to its commitment (0: nothing)."""

    def growing(self, held: int) -> bool:
        """It asks the market for nodes it neither holds nor declared already."""
        return self.want > max(held, self.declared)


@dataclass(frozen=True, slots=True)
class AfterTick(Unrecorded):
    """A declaration that must run after the island's tick in flight (market/runner.py, step 2)."""

    done: Future[None]


class VmDesk:
    def __init__(self, market: Market, guard: SpendGuard) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures
        self._hot = market.hot
        self._guard = guard

    def capacity(self, cluster_id: str) -> CapacityView:
        """The VM cluster's declaration and what it holds."""
        with self._db.read() as cur:
            c, island = read_cluster_and_island(cur, cluster_id)
            check_kind(c, "vm")
            return self._view(c, island, cluster_nodes(cur, c.id))

    async def declare(self, cluster_id: str, body: CapacityDeclaration) -> CapacityView:
        """Declare, and answer once the declaration is committed (durable): it runs in the
        store's next group commit. One that changes held nodes while the island's tick is in
        flight waits for that tick, then runs (and is checked) again."""
        price = optional_price("max_price_per_gpu_hour", body.max_price_per_gpu_hour)
        d = Declaration(body.max_gpus, price, body.release)
        while True:
            answer = await asyncio.wrap_future(
                self._db.submit(lambda batch: self._declare(batch, cluster_id, d))
            )
            if not isinstance(answer, AfterTick):
                return answer
            await asyncio.wrap_future(answer.done)

    def _declare(self, batch: Batch, cluster_id: str, d: Declaration) -> CapacityView | AfterTick:
        """A group-commit job on the hot copy (market/hot.py): every check first, from memory;
        then the changes, staged for the batch's writes. Answers with the capacity view."""
        self._hot.begin(batch)
        c, nodes = self._hot.cluster(batch.cur, cluster_id)
        check_kind(c, "vm")
        island = self._hot.island(batch.cur, c.island)
        _check(c, island, d, nodes)
        now = self._clock.now_ns()
        change = _change(c, island, d, nodes, now)
        self._check_guard(batch.cur, c, island, d, change, nodes, now)
        tick = self._lock.tick_in_flight(island.id)
        if tick is not None and (change.gone or any(change.raised)):
            return AfterTick(tick)  # it changes nodes the tick in flight may write
        self._stage(c, island, d, change, now)
        return self._view(c, island, nodes)

    def _check_guard(
        self,
        cur: Cursor,
        c: Cluster,
        island: Island,
        d: Declaration,
        change: Change,
        nodes: list[Node],
        now: int,
    ) -> None:
        """Growth is new demand (balance, reserve, its worst case and the raise within the
        spend limit); otherwise only a raised ceiling commits more."""

        def holdings() -> list[Node]:
            self._hot.flush(cur)  # the spent figure reads the ledger: earlier jobs' rows first
            return nodes

        raised = sum(change.raised)
        if change.growing(len(nodes)):
            gpus = (change.want - len(nodes)) * island.gpus_per_node
            self._guard.check_new_demand(cur, c, island, d.max_price, gpus, now, holdings, raised)
            return
        if change.want > len(nodes):
            self._guard.check_bid(c, island, d.max_price)
        self._guard.check_spend(cur, c, island, raised, now, holdings)

    def _stage(self, c: Cluster, island: Island, d: Declaration, change: Change, now: int) -> None:
        """The new demand, the raised commitments and the released nodes, staged for the
        batch's writes (market/hot.py)."""
        if change.want != change.declared:
            # growth dates only the added units; a lower declaration drops the youngest
            seq = self._figures.next_seq() if change.want > change.declared else 0
            c.demand = resized(c.demand, change.want, now, seq)
        c.max_gpus, c.max_price = d.max_gpus, d.max_price
        self._hot.stage_demand(c)
        if any(change.raised):
            assert d.max_price is not None
            self._hot.stage_nodes(*recommitted(c, change.kept, change.raised, d.max_price, now))
        if change.gone:
            rate = self._figures.rate(island.id, c.id)
            billed = self._figures.billed(island.id)
            entries = scale_down(c, island.gpus_per_node, change.gone, now, rate, billed)
            self._hot.stage_release(c, change.gone, entries)

    def _view(self, c: Cluster, island: Island, nodes: list[Node]) -> CapacityView:
        rate = self._figures.rate(island.id, c.id) if nodes else None
        return _capacity_view(c, island, nodes, rate)


def _check(c: Cluster, island: Island, d: Declaration, nodes: list[Node]) -> None:
    """The declaration's own checks: whole nodes the island has, a price unless it asks for
    nothing, only held nodes released."""
    g = island.gpus_per_node
    if d.max_gpus < 0:
        raise Invalid("max_gpus", "must not be negative", cluster=c.id, max_gpus=d.max_gpus)
    if d.max_gpus % g:
        raise OffGrid(
            f"max_gpus {d.max_gpus} is not a multiple of gpus_per_node {g} (never rounded)",
            cluster=c.id,
            max_gpus=d.max_gpus,
            gpus_per_node=g,
        )
    if d.max_gpus > island.nodes * g:
        raise Invalid(
            "max_gpus", f"the island has {island.nodes * g} GPUs", cluster=c.id, max_gpus=d.max_gpus
        )
    if d.max_price is None and d.max_gpus:
        raise Invalid("max_price_per_gpu_hour", "is required unless max_gpus is 0", cluster=c.id)
    held = {n.id for n in nodes}
    unknown = [r for r in d.release if r not in held]
    if unknown:
        raise Invalid("release", f"not held by this cluster: {', '.join(unknown)}", cluster=c.id)


def _change(c: Cluster, island: Island, d: Declaration, nodes: list[Node], now: int) -> Change:
    """A scale-down gives back the nominated nodes first, then the newest grants; a higher
    ceiling lifts the cap of the nodes kept, so their commitments grow with it."""
    g = island.gpus_per_node
    want = d.max_gpus // g
    excess = len(nodes) - want
    gone: list[Node] = []
    if excess > 0:
        held = {n.id: n for n in nodes}
        nominated = [held[r] for r in dict.fromkeys(d.release)]
        rest = newest_first([n for n in nodes if n.id not in set(d.release)])
        gone = (nominated + rest)[:excess]
    leaving = {n.id for n in gone}
    kept = [n for n in nodes if n.id not in leaving]
    raised = outgrown(kept, d.max_price or 0, g, now)
    return Change(want, c.max_gpus // g, gone, kept, raised)


def _capacity_view(c: Cluster, island: Island, nodes: list[Node], rate: int | None) -> CapacityView:
    held = len(nodes) * island.gpus_per_node
    return CapacityView(
        cluster=c.id,
        island=island.id,
        gpus_per_node=island.gpus_per_node,
        max_gpus=c.max_gpus,
        max_price_per_gpu_hour=maybe_usd(c.max_price),
        held_gpus=held,
        pending_gpus=max(0, c.max_gpus - held),
        nodes=[
            HeldNodeView(
                id=n.id,
                granted_at=maybe_datetime(n.granted_at),
                window_ends_at=maybe_datetime(n.window_ends_at),
                locked_price=maybe_usd(n.locked_price),
            )
            for n in nodes
        ],
        rate=maybe_usd(rate),
        bid_too_low=c.max_price is not None
        and c.max_gpus > held
        and c.max_price < island.reserve_price,
        spend_limit=maybe_usd(c.spend_limit),
        pending_reason=c.pending_reason,
        pending_detail=pending_detail_view(c.pending_reason, c.pending_detail),
    )
