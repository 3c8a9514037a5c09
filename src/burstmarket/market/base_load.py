"""Base load blocks (docs/market.md "Base load"): fixed nodes, fixed term, fixed rate, one live
block per Kubernetes cluster, within the island's reservable inventory.

Two ways a block comes to be:
- a tenant buys a posted cell of its island's offer grid (`buy`): only where buying is open,
  at a posted rate the reserve has not overtaken, for a size that fits now, with the funds
  (the whole price on the balance, or a security deposit and the rest owed by wire, see
  market/purchases.py);
- the operator makes one directly (`create`), as the account team's tool: any size, term and
  rate within the island's cap, with no offer, no reserve and no funds asked.
A block starts at once and bills its first 5-minute step then; the ticks deliver its nodes,
place the cluster's jobs on it, bill its next steps, step it down at the end of its term and
cancel it after 24 h of a balance at or below zero (market/tick/). The account team changes it
(`change`): a new rate or size ends it at that instant and starts a new block from it; the end
date and the notes change in place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar, cast

from burstmarket.clock import NS_PER_HOUR, maybe_datetime, rfc3339, to_datetime
from burstmarket.contract import BlocksView, BlockView, OfferCell, OffersView, PackingView
from burstmarket.errors import (
    BuyingClosed,
    Conflict,
    Forbidden,
    InsufficientBalance,
    Invalid,
    NotAvailable,
    NotFound,
    OnePerCluster,
    SoldOut,
)
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import (
    BASE_LOAD,
    DEPOSIT_RETURN,
    RECEIVABLE,
    SECURITY_DEPOSIT,
    WIRE,
    Entry,
    amount,
    period_entry,
)
from burstmarket.market.market import Market
from burstmarket.market.model import (
    ACCOUNT_TEAM,
    CHANGED,
    LIVE,
    PURCHASE,
    Block,
    Cluster,
    Island,
    Offer,
)
from burstmarket.market.offers import (
    AVAILABLE,
    NOT_AVAILABLE,
    cell_state,
    live_blocks,
    price,
    read_offers,
    replace_offers,
)
from burstmarket.market.purchases import bought, deposit_for, due_by
from burstmarket.market.state import read_cluster, read_island
from burstmarket.market.tables import (
    BLOCK_PROGRESS,
    BLOCK_TERMS,
    BLOCKS,
    ISLAND_TERMS,
    ISLANDS,
    LEDGER,
)
from burstmarket.money import units_to_usd, usd
from burstmarket.states import BlockOrigin, OfferState
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

T = TypeVar("T")

MAX_TERM_HOURS = 3 * 365 * 24
MAX_NODES = 100_000
CLOSED = "buying base load on this island is not open: your account team arranges the block"


def _usd(units: int) -> float:
    return float(units_to_usd(units))


class BaseLoadDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures

    @contextmanager
    def _writing(self) -> Iterator[tuple[Cursor, list[Entry]]]:
        """An exclusive section and its transaction; the ledger rows put in the list are
        written in it, and folded into the balances once it committed."""
        entries: list[Entry] = []
        with self._lock:
            with self._db.write() as cur:
                yield cur, entries
                LEDGER.insert(cur, entries)
            self._figures.fold(entries)

    def _read(self, fn: Callable[[Cursor], T]) -> T:
        with self._db.read() as cur:
            return fn(cur)

    # --- the operator: the account team's block, changes, packing, the offer grid ---------

    def create(self, cluster_id: str, nodes: int, rate: int, term_hours: int) -> BlockView:
        """The account team's block: any size, term and rate within the island's cap; no
        posted offer, reserve or funds are asked (tenants buy with `buy`)."""
        _check_nodes(nodes)
        _check_term(term_hours)
        with self._writing() as (cur, entries):
            c = self._k8s(cur, cluster_id, tenant=False)
            island = read_island(cur, c.island)
            live = live_blocks(cur, island.id)
            self._one_per_cluster(c, live)
            _check_cap(c, island, live, nodes)
            b = self._start(cur, c, nodes, rate, term_hours * NS_PER_HOUR, ACCOUNT_TEAM, entries)
        return self.block(b.id)

    def change(
        self,
        block_id: str,
        rate: int | None,
        nodes: int | None,
        ends_at: int | None,
        notes: str | None,
        set_notes: bool,
    ) -> BlockView:
        """A new rate or size ends the live block now and starts a new one with the new figures
        (the old bills to the instant, the new from it, exactly); the end date and the notes
        change in place."""
        if rate is None and nodes is None and ends_at is None and not set_notes:
            raise Invalid("body", "names nothing to change", block=block_id)
        if nodes is not None:
            _check_nodes(nodes)
        with self._writing() as (cur, entries):
            b = self._block(cur, block_id)
            if b.state != LIVE:
                raise Conflict(f"block {b.id} is {b.state}: only a live block changes", block=b.id)
            c = read_cluster(cur, b.cluster)
            island = read_island(cur, b.island)
            now = self._clock.now_ns()
            if ends_at is not None and ends_at <= now:
                raise Invalid("ends_at", "must be later than now", block=b.id)
            if set_notes:
                b.notes = notes
            resized = nodes is not None and nodes != b.nodes
            if resized or (rate is not None and rate != b.rate):
                if nodes is not None:
                    others = [x for x in live_blocks(cur, island.id) if x.id != b.id]
                    _check_cap(c, island, others, nodes)
                b = self._split(cur, c, b, now, rate, nodes, ends_at, entries)
            else:
                if ends_at is not None:
                    self._end_at(c, island, b, ends_at, now, entries)
                BLOCKS.update(cur, [b], BLOCK_TERMS)
        return self.block(b.id)

    def _split(
        self,
        cur: Cursor,
        c: Cluster,
        old: Block,
        now: int,
        rate: int | None,
        nodes: int | None,
        ends_at: int | None,
        entries: list[Entry],
    ) -> Block:
        island = read_island(cur, old.island)
        g = island.gpus_per_node
        entries += _bill_steps(c, island, old, now, now)  # every step started before now
        if old.billed_until > now:  # the part of its last step after now is given back
            entries.append(_base_load(now, c, island, old, now, old.billed_until, -old.nodes * g))
            old.billed_until = now
        old.state, old.ended_at = CHANGED, now
        BLOCKS.update(cur, [old], BLOCK_PROGRESS)
        new = Block(
            id=self._next_id(cur, c),
            cluster=c.id,
            island=old.island,
            nodes=old.nodes if nodes is None else nodes,
            rate=old.rate if rate is None else rate,
            starts_at=now,
            ends_at=old.ends_at if ends_at is None else ends_at,
            state=LIVE,
            ended_at=None,
            billed_until=now,
            negative_since=old.negative_since,
            origin=old.origin,
            purchase=old.purchase,
            owed_by=old.owed_by,
            notes=old.notes,
        )
        BLOCKS.insert(cur, [new])
        run(cur, "move_block_nodes", old=old.id, new=new.id)
        entries += _bill_steps(c, island, new, now, now + 1)  # its first step, from the instant
        BLOCKS.update(cur, [new], BLOCK_PROGRESS)
        return new

    def _end_at(
        self, c: Cluster, island: Island, b: Block, ends_at: int, now: int, entries: list[Entry]
    ) -> None:
        """A new end date: a shorter term gives back the steps billed beyond it."""
        if b.billed_until > ends_at:
            g = island.gpus_per_node
            entries.append(_base_load(now, c, island, b, ends_at, b.billed_until, -b.nodes * g))
            b.billed_until = ends_at
        b.ends_at = ends_at

    def set_packing(self, cluster_id: str, enabled: bool) -> PackingView:
        """Jobs smaller than one node may (or may no longer) be packed onto the cluster's
        block; those running stay where they are."""
        with self._lock, self._db.write() as cur:
            c = self._k8s(cur, cluster_id, tenant=False)
            run(cur, "update_packing", id=c.id, packing=enabled)
        return PackingView(cluster=c.id, enabled=enabled)

    def post_offers(
        self,
        island_id: str,
        buying_open: bool,
        reservable_nodes: int,
        cells: list[tuple[int, int, int | None]],
    ) -> OffersView:
        """The island's offer grid, as a whole: whether tenants may buy, its reservable
        inventory (the cap on nodes blocks reserve) and the cells (size, term, rate)."""
        with self._lock, self._db.write() as cur:
            island = read_island(cur, island_id)
            if not 0 <= reservable_nodes <= island.nodes:
                raise Invalid(
                    "reservable_nodes",
                    f"must be between 0 and the island's {island.nodes} nodes",
                    reservable_nodes=reservable_nodes,
                )
            offers = _grid(island, cells)
            island.buying_open, island.base_load_cap = buying_open, reservable_nodes
            ISLANDS.update(cur, [island], ISLAND_TERMS)
            replace_offers(cur, island.id, offers)
        return self._read(lambda cur: self._offers(cur, read_island(cur, island_id), None))

    # --- the tenant: the offers, buying, its blocks ---------------------------------------

    def offers(self, cluster_id: str) -> OffersView:
        def read(cur: Cursor) -> OffersView:
            c = self._k8s(cur, cluster_id)
            return self._offers(cur, read_island(cur, c.island), c)

        return self._read(read)

    def _offers(self, cur: Cursor, island: Island, c: Cluster | None) -> OffersView:
        """The grid with each cell's state now; with `c`, the deposit each would take from its
        account and its live block."""
        live = live_blocks(cur, island.id)
        balance = None if c is None else self._figures.balance(c.account)
        g = island.gpus_per_node
        cells = []
        for offer in read_offers(cur, island.id):
            state = cell_state(offer, offer.size_gpus, island, live)
            whole = (
                None if offer.rate is None else price(offer.rate, offer.size_gpus, offer.term_hours)
            )
            deposit = None if whole is None or balance is None else deposit_for(whole, balance)
            cells.append(
                OfferCell(
                    size_gpus=offer.size_gpus,
                    nodes=offer.size_gpus // g,
                    term_hours=offer.term_hours,
                    rate_per_gpu_hour=None if offer.rate is None else usd(offer.rate),
                    price_usd=None if whole is None else _usd(whole),
                    deposit_usd=None if deposit is None else _usd(deposit),
                    state=cast(OfferState, state.state),
                    until=maybe_datetime(state.until),
                )
            )
        mine = next((b.id for b in live if c is not None and b.cluster == c.id), None)
        return OffersView(
            island=island.id,
            gpus_per_node=g,
            buying_open=island.buying_open,
            reservable_nodes=island.base_load_cap,
            reserved_nodes=sum(b.nodes for b in live),
            cells=cells,
            live_block=mine,
            detail=None if island.buying_open else CLOSED,
        )

    def buy(self, cluster_id: str, size_gpus: int, term_hours: int) -> BlockView:
        """The cluster buys a posted cell of its island (docs/market.md "Buying")."""
        if size_gpus <= 0:
            raise Invalid("size_gpus", "must be a positive number of GPUs", size_gpus=size_gpus)
        _check_term(term_hours)
        with self._writing() as (cur, entries):
            c = self._k8s(cur, cluster_id)
            island = read_island(cur, c.island)
            g = island.gpus_per_node
            if size_gpus % g:
                raise Invalid(
                    "size_gpus",
                    f"must be whole nodes: a multiple of gpus_per_node {g}",
                    cluster=c.id,
                    size_gpus=size_gpus,
                    gpus_per_node=g,
                )
            if not island.buying_open:
                raise BuyingClosed(CLOSED, cluster=c.id, island=island.id)
            live = live_blocks(cur, island.id)
            self._one_per_cluster(c, live)
            offer = next(
                (
                    o
                    for o in read_offers(cur, island.id)
                    if (o.size_gpus, o.term_hours) == (size_gpus, term_hours)
                ),
                None,
            )
            self._check_cell(c, island, live, offer, size_gpus, term_hours)
            assert offer is not None
            assert offer.rate is not None
            whole = price(offer.rate, size_gpus, term_hours)
            balance = self._figures.balance(c.account)
            deposit = deposit_for(whole, balance)
            if deposit > balance:
                raise InsufficientBalance(
                    f"the block's price is {units_to_usd(whole)} USD and the balance of "
                    f"{units_to_usd(balance)} USD does not cover its security deposit of "
                    f"{units_to_usd(deposit)} USD",
                    cluster=c.id,
                    account=c.account,
                    price_usd=_usd(whole),
                    deposit_usd=_usd(deposit),
                    balance_usd=_usd(balance),
                )
            owed = whole - deposit if deposit else 0
            b = self._start(
                cur,
                c,
                size_gpus // g,
                offer.rate,
                term_hours * NS_PER_HOUR,
                PURCHASE,
                entries,
                owed_by=None if not owed else due_by(self._clock.now_ns()),
            )
            entries += bought(b.starts_at, c.account, c.id, island.id, b.id, deposit, owed)
        return self.block(b.id)

    def _check_cell(
        self,
        c: Cluster,
        island: Island,
        live: list[Block],
        offer: Offer | None,
        size_gpus: int,
        term_hours: int,
    ) -> None:
        state = cell_state(offer, size_gpus, island, live)
        figures = {"cluster": c.id, "size_gpus": size_gpus, "term_hours": term_hours}
        if state.state == NOT_AVAILABLE:
            raise NotAvailable(
                f"{size_gpus} GPUs are more than the island's reservable inventory of "
                f"{island.base_load_cap} nodes: not available on this island",
                **figures,
                reservable_nodes=island.base_load_cap,
            )
        if state.state == AVAILABLE:
            return
        if state.until is not None:
            raise SoldOut(
                f"{size_gpus} GPUs do not fit the island's reservable inventory now: sold out "
                "until enough earlier blocks end",
                **figures,
                until=rfc3339(state.until),
            )
        rate = None if offer is None or offer.rate is None else usd(offer.rate)
        raise SoldOut(
            f"no rate is posted for {size_gpus} GPUs over {term_hours} hours: sold out",
            **figures,
            rate_per_gpu_hour=rate,
            reserve_price=usd(island.reserve_price),
        )

    def blocks_of(self, cluster_id: str) -> BlocksView:
        """The cluster's live block and its earlier ones (the tenant's read)."""

        def read(cur: Cursor) -> BlocksView:
            c = self._k8s(cur, cluster_id)
            views = self._views(cur, c)
            live = next((v for v in views if v.state == LIVE), None)
            return BlocksView(live=live, past=[v for v in views if v is not live])

        return self._read(read)

    # --- reads ----------------------------------------------------------------------------

    def blocks(self, cluster_id: str) -> list[BlockView]:
        """The cluster's blocks, newest first."""
        return self._read(lambda cur: self._views(cur, read_cluster(cur, cluster_id)))

    def block(self, block_id: str) -> BlockView:
        def read(cur: Cursor) -> BlockView:
            b = self._block(cur, block_id)
            return next(v for v in self._views(cur, read_cluster(cur, b.cluster)) if v.id == b.id)

        return self._read(read)

    def _views(self, cur: Cursor, c: Cluster) -> list[BlockView]:
        g = read_island(cur, c.island).gpus_per_node
        money: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in fetch(cur, "cluster_block_money", cluster=c.id):
            money[r["block"]][r["kind"]] += int(r["units"])
        now = self._clock.now_ns()
        return [_view(b, g, money, now) for b in self._blocks(cur, c.id)]

    # --- helpers --------------------------------------------------------------------------

    def _start(
        self,
        cur: Cursor,
        c: Cluster,
        nodes: int,
        rate: int,
        term_ns: int,
        origin: str,
        entries: list[Entry],
        owed_by: int | None = None,
    ) -> Block:
        """A new block from now, its first 5-minute step billed at once."""
        now = self._clock.now_ns()
        block_id = self._next_id(cur, c)
        b = Block(
            id=block_id,
            cluster=c.id,
            island=c.island,
            nodes=nodes,
            rate=rate,
            starts_at=now,
            ends_at=now + term_ns,
            state=LIVE,
            ended_at=None,
            billed_until=now,
            negative_since=None,
            origin=origin,
            purchase=block_id,
            owed_by=owed_by,
        )
        island = read_island(cur, c.island)
        entries += _bill_steps(c, island, b, now, now + 1)
        BLOCKS.insert(cur, [b])
        return b

    def _next_id(self, cur: Cursor, c: Cluster) -> str:
        return f"{c.id}-bl{len(self._blocks(cur, c.id)) + 1}"

    def _blocks(self, cur: Cursor, cluster_id: str) -> list[Block]:
        return [BLOCKS.from_row(r) for r in fetch(cur, "cluster_blocks", cluster=cluster_id)]

    def _block(self, cur: Cursor, block_id: str) -> Block:
        row = fetch_one(cur, "block", id=block_id)
        if row is None:
            raise NotFound(f"no base load block {block_id!r}", block=block_id)
        return BLOCKS.from_row(row)

    def _k8s(self, cur: Cursor, cluster_id: str, tenant: bool = True) -> Cluster:
        """The cluster, a Kubernetes one: a VM cluster's token is `forbidden` here, as on every
        Kubernetes endpoint; the operator naming one is `invalid` (field `cluster`)."""
        c = read_cluster(cur, cluster_id)
        if not KINDS[c.kind].runs_jobs:  # a block runs jobs (docs/market.md "Base load")
            detail = f"base load blocks are for Kubernetes clusters; cluster {c.id} is {c.kind}"
            if tenant:
                raise Forbidden(detail, cluster=c.id, kind=c.kind)
            raise Invalid("cluster", detail, cluster=c.id, kind=c.kind)
        return c

    def _one_per_cluster(self, c: Cluster, live: list[Block]) -> None:
        mine = [b for b in live if b.cluster == c.id]
        if mine:
            raise OnePerCluster(
                f"cluster {c.id} holds a live base load block until "
                f"{to_datetime(mine[0].ends_at).isoformat()}; a second is refused until it ends",
                cluster=c.id,
                block=mine[0].id,
            )


def _check_nodes(nodes: int) -> None:
    if not 1 <= nodes <= MAX_NODES:
        raise Invalid("nodes", f"must be between 1 and {MAX_NODES}", nodes=nodes)


def _check_term(term_hours: int) -> None:
    if not 1 <= term_hours <= MAX_TERM_HOURS:
        raise Invalid(
            "term_hours",
            f"must be whole hours between 1 and {MAX_TERM_HOURS}",
            term_hours=term_hours,
        )


def _check_cap(c: Cluster, island: Island, live: list[Block], nodes: int) -> None:
    reserved = sum(b.nodes for b in live)
    if reserved + nodes > island.base_load_cap:
        raise Invalid(
            "nodes",
            f"{nodes} nodes do not fit the island's reservable cap of "
            f"{island.base_load_cap} nodes ({reserved} already reserved)",
            cluster=c.id,
            nodes=nodes,
            base_load_cap=island.base_load_cap,
            reserved=reserved,
        )


def _grid(island: Island, cells: list[tuple[int, int, int | None]]) -> list[Offer]:
    """The posted cells, each checked: whole nodes, whole hours, a rate at or above the
    reserve, no cell twice."""
    g = island.gpus_per_node
    seen: set[tuple[int, int]] = set()
    offers = []
    for i, (size, term, rate) in enumerate(cells):
        where = f"cells[{i}]"
        if not 1 <= size // g <= MAX_NODES or size % g:
            raise Invalid(
                f"{where}.size_gpus",
                f"must be whole nodes: a positive multiple of gpus_per_node {g}",
                size_gpus=size,
            )
        if not 1 <= term <= MAX_TERM_HOURS:
            raise Invalid(
                f"{where}.term_hours",
                f"must be whole hours between 1 and {MAX_TERM_HOURS}",
                term_hours=term,
            )
        if rate is not None and rate < island.reserve_price:
            raise Invalid(
                f"{where}.rate_per_gpu_hour",
                f"is under the island's reserve price {usd(island.reserve_price)}",
                rate_per_gpu_hour=usd(rate),
                reserve_price=usd(island.reserve_price),
            )
        if (size, term) in seen:
            raise Invalid(where, "posts a size and term twice", size_gpus=size, term_hours=term)
        seen.add((size, term))
        offers.append(Offer(island.id, size, term, rate))
    return offers


def _base_load(
    at: int, c: Cluster, island: Island, b: Block, start: int, end: int, gpus: int
) -> Entry:
    """A base load row written at `at`: `gpus` GPUs (negative: given back) over [start, end)."""
    return period_entry(
        BASE_LOAD, at, c.account, c.id, island.id, start, end, gpus, b.rate, block=b.id
    )


def _bill_steps(c: Cluster, island: Island, b: Block, now: int, until: int) -> list[Entry]:
    """The block's 5-minute steps that start before `until`, each billed for every node."""
    gpus = b.nodes * island.gpus_per_node
    return [_base_load(now, c, island, b, start, end, gpus) for start, end in b.steps(until)]


def _view(b: Block, g: int, money: dict[str, dict[str, int]], now: int) -> BlockView:
    gpus = b.nodes * g
    bought_ = money.get(b.purchase, {})
    owed = bought_.get(RECEIVABLE, 0) + bought_.get(WIRE, 0)
    return BlockView(
        id=b.id,
        cluster=b.cluster,
        island=b.island,
        nodes=b.nodes,
        gpus=gpus,
        rate_per_gpu_hour=usd(b.rate),
        term_hours=(b.ends_at - b.starts_at) / NS_PER_HOUR,
        price_usd=_usd(amount(b.rate, gpus, b.ends_at - b.starts_at)),
        starts_at=to_datetime(b.starts_at),
        ends_at=to_datetime(b.ends_at),
        state=b.state,
        ended_at=maybe_datetime(b.ended_at),
        billed_until=maybe_datetime(b.billed_until),
        billed_usd=_usd(money.get(b.id, {}).get(BASE_LOAD, 0)),
        deposit_usd=_usd(bought_.get(SECURITY_DEPOSIT, 0)),
        deposit_held_usd=_usd(bought_.get(SECURITY_DEPOSIT, 0) + bought_.get(DEPOSIT_RETURN, 0)),
        owed_usd=_usd(owed),
        owed_by=maybe_datetime(b.owed_by),
        overdue=owed > 0 and b.owed_by is not None and now >= b.owed_by,
        origin=cast(BlockOrigin, b.origin),
        purchase=b.purchase,
        notes=b.notes,
    )
