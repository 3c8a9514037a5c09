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

Each request checks its inputs first (below), then reads, applies the block rules
(market/blocks.py, market/offers.py, market/purchases.py) and writes in one exclusive section;
its answer is formatted by the views at the end of this module.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import msgspec

from burstmarket.clock import NS_PER_HOUR, maybe_datetime, to_datetime
from burstmarket.contract import (
    BlockChange,
    BlocksView,
    BlockView,
    NewBlock,
    NewPurchase,
    OfferCell,
    OfferGrid,
    OffersView,
    PackingChange,
    PackingView,
)
from burstmarket.errors import (
    BuyingClosed,
    Conflict,
    Forbidden,
    InsufficientBalance,
    Invalid,
    NotFound,
)
from burstmarket.market.blocks import (
    check_cap,
    check_cell,
    check_one_per_cluster,
    end_at,
    opened,
    split,
)
from burstmarket.market.desks.inputs import instant, optional_price, price
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import (
    BASE_LOAD,
    DEPOSIT_RETURN,
    RECEIVABLE,
    SECURITY_DEPOSIT,
    WIRE,
    Entry,
    amount,
)
from burstmarket.market.lookups import read_cluster, read_island
from burstmarket.market.market import Market
from burstmarket.market.model import ACCOUNT_TEAM, LIVE, PURCHASE, Block, Cluster, Island, Offer
from burstmarket.market.offers import cell_state, live_blocks, read_offers, replace_offers
from burstmarket.market.offers import price as whole_price
from burstmarket.market.purchases import bought, deposit_for, due_by
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

MAX_TERM_HOURS = 3 * 365 * 24
MAX_NODES = 100_000
CLOSED = "buying base load on this island is not open: your account team arranges the block"

Cell = tuple[int, int, int | None]
"""A posted cell's figures: size in GPUs, term in hours, µUSD per GPU-hour (None: no rate)."""


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

    # --- the operator: the account team's block, changes, packing, the offer grid ---------

    def create(self, cluster_id: str, new: NewBlock) -> BlockView:
        """The account team's block: any size, term and rate within the island's cap; no
        posted offer, reserve or funds are asked (tenants buy with `buy`)."""
        rate = price("rate_per_gpu_hour", new.rate_per_gpu_hour)
        _check_nodes(new.nodes)
        _check_term(new.term_hours)
        with self._writing() as (cur, entries):
            c = _k8s(cur, cluster_id, tenant=False)
            island = read_island(cur, c.island)
            live = live_blocks(cur, island.id)
            check_one_per_cluster(c, live)
            check_cap(c, island, live, new.nodes)
            term = new.term_hours * NS_PER_HOUR
            b = self._start(cur, c, island, new.nodes, rate, term, ACCOUNT_TEAM, entries)
        return self.block(b.id)

    def change(self, block_id: str, change: BlockChange) -> BlockView:
        """A new rate or size ends the live block now and starts a new one with the new figures
        (the old bills to the instant, the new from it, exactly); the end date and the notes
        change in place. A field left out is kept (None below: no new figure)."""
        ends_at = None if change.ends_at is msgspec.UNSET else instant("ends_at", change.ends_at)
        rate = change.rate_per_gpu_hour
        new_rate = None if rate is msgspec.UNSET else price("rate_per_gpu_hour", rate)
        nodes = None if change.nodes is msgspec.UNSET else change.nodes
        notes = change.notes
        if new_rate is None and nodes is None and ends_at is None and notes is msgspec.UNSET:
            raise Invalid("body", "names nothing to change", block=block_id)
        if nodes is not None:
            _check_nodes(nodes)
        with self._writing() as (cur, entries):
            b = _block(cur, block_id)
            if b.state != LIVE:
                raise Conflict(f"block {b.id} is {b.state}: only a live block changes", block=b.id)
            c = read_cluster(cur, b.cluster)
            island = read_island(cur, b.island)
            now = self._clock.now_ns()
            if ends_at is not None and ends_at <= now:
                raise Invalid("ends_at", "must be later than now", block=b.id)
            if notes is not msgspec.UNSET:
                b.notes = notes
            resized = nodes is not None and nodes != b.nodes
            if resized or (new_rate is not None and new_rate != b.rate):
                b = _split(cur, c, island, b, now, new_rate, nodes, ends_at, entries)
            else:
                if ends_at is not None:
                    entries += end_at(c, island, b, ends_at, now)
                BLOCKS.update(cur, [b], BLOCK_TERMS)
        return self.block(b.id)

    def set_packing(self, cluster_id: str, change: PackingChange) -> PackingView:
        """Jobs smaller than one node may (or may no longer) be packed onto the cluster's
        block; those running stay where they are."""
        with self._lock, self._db.write() as cur:
            c = _k8s(cur, cluster_id, tenant=False)
            run(cur, "update_packing", id=c.id, packing=change.enabled)
        return PackingView(cluster=c.id, enabled=change.enabled)

    def post_offers(self, island_id: str, grid: OfferGrid) -> OffersView:
        """The island's offer grid, as a whole: whether tenants may buy, its reservable
        inventory (the cap on nodes blocks reserve) and the cells (size, term, rate)."""
        cells = [
            (
                cell.size_gpus,
                cell.term_hours,
                optional_price(f"cells[{i}].rate_per_gpu_hour", cell.rate_per_gpu_hour),
            )
            for i, cell in enumerate(grid.cells)
        ]
        with self._lock, self._db.write() as cur:
            island = read_island(cur, island_id)
            if not 0 <= grid.reservable_nodes <= island.nodes:
                raise Invalid(
                    "reservable_nodes",
                    f"must be between 0 and the island's {island.nodes} nodes",
                    reservable_nodes=grid.reservable_nodes,
                )
            offers = _grid(island, cells)
            island.buying_open, island.base_load_cap = grid.buying_open, grid.reservable_nodes
            ISLANDS.update(cur, [island], ISLAND_TERMS)
            replace_offers(cur, island.id, offers)
        with self._db.read() as cur:
            island = read_island(cur, island_id)
            live = live_blocks(cur, island.id)
            return _offers_view(island, read_offers(cur, island.id), live)

    # --- the tenant: the offers, buying, its blocks ---------------------------------------

    def offers(self, cluster_id: str) -> OffersView:
        """The grid with each cell's state now, the deposit each would take from the cluster's
        account, and its live block."""
        with self._db.read() as cur:
            c = _k8s(cur, cluster_id)
            island = read_island(cur, c.island)
            live = live_blocks(cur, island.id)
            offers = read_offers(cur, island.id)
        return _offers_view(island, offers, live, c, self._figures.balance(c.account))

    def buy(self, cluster_id: str, purchase: NewPurchase) -> BlockView:
        """The cluster buys a posted cell of its island (docs/market.md "Buying")."""
        size_gpus, term_hours = purchase.size_gpus, purchase.term_hours
        if size_gpus <= 0:
            raise Invalid("size_gpus", "must be a positive number of GPUs", size_gpus=size_gpus)
        _check_term(term_hours)
        with self._writing() as (cur, entries):
            c = _k8s(cur, cluster_id)
            island = read_island(cur, c.island)
            _check_whole_nodes(c, island, size_gpus)
            if not island.buying_open:
                raise BuyingClosed(CLOSED, cluster=c.id, island=island.id)
            live = live_blocks(cur, island.id)
            check_one_per_cluster(c, live)
            offer = _posted(read_offers(cur, island.id), size_gpus, term_hours)
            check_cell(c, island, live, offer, size_gpus, term_hours)
            assert offer is not None
            assert offer.rate is not None
            whole = whole_price(offer.rate, size_gpus, term_hours)
            deposit = self._deposit(c, whole)
            owed = whole - deposit if deposit else 0
            owed_by = None if not owed else due_by(self._clock.now_ns())
            nodes, term = size_gpus // island.gpus_per_node, term_hours * NS_PER_HOUR
            b = self._start(cur, c, island, nodes, offer.rate, term, PURCHASE, entries, owed_by)
            entries += bought(b.starts_at, c.account, c.id, island.id, b.id, deposit, owed)
        return self.block(b.id)

    def _deposit(self, c: Cluster, whole: int) -> int:
        """The security deposit a purchase of `whole` takes; refused if the balance is short."""
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
        return deposit

    def blocks_of(self, cluster_id: str) -> BlocksView:
        """The cluster's live block and its earlier ones (the tenant's read)."""
        with self._db.read() as cur:
            views = self._views(cur, _k8s(cur, cluster_id))
        live = next((v for v in views if v.state == LIVE), None)
        return BlocksView(live=live, past=[v for v in views if v is not live])

    # --- reads ----------------------------------------------------------------------------

    def blocks(self, cluster_id: str) -> list[BlockView]:
        """The cluster's blocks, newest first."""
        with self._db.read() as cur:
            return self._views(cur, read_cluster(cur, cluster_id))

    def block(self, block_id: str) -> BlockView:
        with self._db.read() as cur:
            b = _block(cur, block_id)
            return next(v for v in self._views(cur, read_cluster(cur, b.cluster)) if v.id == b.id)

    def _views(self, cur: Cursor, c: Cluster) -> list[BlockView]:
        g = read_island(cur, c.island).gpus_per_node
        money: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for r in fetch(cur, "cluster_block_money", cluster=c.id):
            money[r["block"]][r["kind"]] += int(r["units"])
        now = self._clock.now_ns()
        return [_block_view(b, g, money, now) for b in _blocks(cur, c.id)]

    # --- helpers --------------------------------------------------------------------------

    def _start(
        self,
        cur: Cursor,
        c: Cluster,
        island: Island,
        nodes: int,
        rate: int,
        term_ns: int,
        origin: str,
        entries: list[Entry],
        owed_by: int | None = None,
    ) -> Block:
        """A new block from now, its first 5-minute step billed at once."""
        now = self._clock.now_ns()
        b, rows = opened(_next_id(cur, c), c, island, nodes, rate, term_ns, origin, now, owed_by)
        entries += rows
        BLOCKS.insert(cur, [b])
        return b


def _split(
    cur: Cursor,
    c: Cluster,
    island: Island,
    old: Block,
    now: int,
    rate: int | None,
    nodes: int | None,
    ends_at: int | None,
    entries: list[Entry],
) -> Block:
    """`old` ends now and the block that continues it starts now, on its nodes; a new size
    must fit the island's cap beside the other live blocks."""
    if nodes is not None:
        others = [x for x in live_blocks(cur, island.id) if x.id != old.id]
        check_cap(c, island, others, nodes)
    new, rows = split(c, island, old, _next_id(cur, c), now, rate, nodes, ends_at)
    entries += rows
    BLOCKS.update(cur, [old], BLOCK_PROGRESS)
    BLOCKS.insert(cur, [new])
    run(cur, "move_block_nodes", old=old.id, new=new.id)
    return new


def _next_id(cur: Cursor, c: Cluster) -> str:
    return f"{c.id}-bl{len(_blocks(cur, c.id)) + 1}"


def _blocks(cur: Cursor, cluster_id: str) -> list[Block]:
    return [BLOCKS.from_row(r) for r in fetch(cur, "cluster_blocks", cluster=cluster_id)]


def _block(cur: Cursor, block_id: str) -> Block:
    row = fetch_one(cur, "block", id=block_id)
    if row is None:
        raise NotFound(f"no base load block {block_id!r}", block=block_id)
    return BLOCKS.from_row(row)


def _k8s(cur: Cursor, cluster_id: str, tenant: bool = True) -> Cluster:
    """The cluster, a Kubernetes one: a VM cluster's token is `forbidden` here, as on every
    Kubernetes endpoint; the operator naming one is `invalid` (field `cluster`)."""
    c = read_cluster(cur, cluster_id)
    if not KINDS[c.kind].runs_jobs:  # a block runs jobs (docs/market.md "Base load")
        detail = f"base load blocks are for Kubernetes clusters; cluster {c.id} is {c.kind}"
        if tenant:
            raise Forbidden(detail, cluster=c.id, kind=c.kind)
        raise Invalid("cluster", detail, cluster=c.id, kind=c.kind)
    return c


def _posted(offers: list[Offer], size_gpus: int, term_hours: int) -> Offer | None:
    return next((o for o in offers if (o.size_gpus, o.term_hours) == (size_gpus, term_hours)), None)


# --- input checks -----------------------------------------------------------------------------


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


def _check_whole_nodes(c: Cluster, island: Island, size_gpus: int) -> None:
    g = island.gpus_per_node
    if size_gpus % g:
        raise Invalid(
            "size_gpus",
            f"must be whole nodes: a multiple of gpus_per_node {g}",
            cluster=c.id,
            size_gpus=size_gpus,
            gpus_per_node=g,
        )


def _grid(island: Island, cells: list[Cell]) -> list[Offer]:
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


# --- views ------------------------------------------------------------------------------------


def _usd(units: int) -> float:
    return float(units_to_usd(units))


def _offers_view(
    island: Island,
    offers: list[Offer],
    live: list[Block],
    c: Cluster | None = None,
    balance: int | None = None,
) -> OffersView:
    """The grid with each cell's state now; with `c`, the deposit each would take from its
    account (of `balance`) and its live block."""
    g = island.gpus_per_node
    cells = []
    for offer in offers:
        state = cell_state(offer, offer.size_gpus, island, live)
        whole = (
            None
            if offer.rate is None
            else whole_price(offer.rate, offer.size_gpus, offer.term_hours)
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


def _block_view(b: Block, g: int, money: dict[str, dict[str, int]], now: int) -> BlockView:
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
