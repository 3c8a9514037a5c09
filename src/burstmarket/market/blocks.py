"""A base load block at a request's instant (docs/market.md "Base load"): the rules the desk
applies (market/desks/base_load_desk.py), pure, on rows it has read.

A block starts at once and bills its first 5-minute step then. A new rate or size splits it:
the old one bills every step started before the instant and gives back the part of its last
step after it; the new one starts at the instant, its first step billed. A new end date gives
back the steps billed beyond it. Blocks reserve the island's reservable inventory, one live
block per cluster."""

from __future__ import annotations

from burstmarket.clock import rfc3339, to_datetime
from burstmarket.errors import Invalid, NotAvailable, OnePerCluster, SoldOut
from burstmarket.market.ledger import BASE_LOAD, Entry, period_entry
from burstmarket.market.model import CHANGED, LIVE, Block, Cluster, Island, Offer
from burstmarket.market.offers import AVAILABLE, NOT_AVAILABLE, cell_state
from burstmarket.money import usd


def opened(
    block_id: str,
    c: Cluster,
    island: Island,
    nodes: int,
    rate: int,
    term_ns: int,
    origin: str,
    now: int,
    owed_by: int | None,
) -> tuple[Block, list[Entry]]:
    """A new block of the cluster's from `now`, and its first 5-minute step's rows."""
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
    return b, bill_steps(c, island, b, now, now + 1)


def split(
    c: Cluster,
    island: Island,
    old: Block,
    new_id: str,
    now: int,
    rate: int | None,
    nodes: int | None,
    ends_at: int | None,
) -> tuple[Block, list[Entry]]:
    """A new rate or size ends `old` at `now` (changed in place) and starts the block that
    continues it, with the new figures; the rows of both."""
    g = island.gpus_per_node
    entries = bill_steps(c, island, old, now, now)  # every step started before now
    if old.billed_until > now:  # the part of its last step after now is given back
        entries.append(base_load(now, c, island, old, now, old.billed_until, -old.nodes * g))
        old.billed_until = now
    old.state, old.ended_at = CHANGED, now
    new = Block(
        id=new_id,
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
    entries += bill_steps(c, island, new, now, now + 1)  # its first step, from the instant
    return new, entries


def end_at(c: Cluster, island: Island, b: Block, ends_at: int, now: int) -> list[Entry]:
    """A new end date (set on `b`): a shorter term gives back the steps billed beyond it."""
    entries = []
    if b.billed_until > ends_at:
        g = island.gpus_per_node
        entries.append(base_load(now, c, island, b, ends_at, b.billed_until, -b.nodes * g))
        b.billed_until = ends_at
    b.ends_at = ends_at
    return entries


def bill_steps(c: Cluster, island: Island, b: Block, now: int, until: int) -> list[Entry]:
    """The block's 5-minute steps that start before `until`, each billed for every node."""
    gpus = b.nodes * island.gpus_per_node
    return [base_load(now, c, island, b, start, end, gpus) for start, end in b.steps(until)]


def base_load(
    at: int, c: Cluster, island: Island, b: Block, start: int, end: int, gpus: int
) -> Entry:
    """A base load row written at `at`: `gpus` GPUs (negative: given back) over [start, end)."""
    return period_entry(
        BASE_LOAD, at, c.account, c.id, island.id, start, end, gpus, b.rate, block=b.id
    )


def check_cap(c: Cluster, island: Island, live: list[Block], nodes: int) -> None:
    """`nodes` more fit the island's reservable cap beside its `live` blocks."""
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


def check_one_per_cluster(c: Cluster, live: list[Block]) -> None:
    mine = [b for b in live if b.cluster == c.id]
    if mine:
        raise OnePerCluster(
            f"cluster {c.id} holds a live base load block until "
            f"{to_datetime(mine[0].ends_at).isoformat()}; a second is refused until it ends",
            cluster=c.id,
            block=mine[0].id,
        )


def check_cell(
    c: Cluster,
    island: Island,
    live: list[Block],
    offer: Offer | None,
    size_gpus: int,
    term_hours: int,
) -> None:
    """The posted cell can be bought now: it fits the reservable inventory, has a rate the
    reserve has not overtaken, and fits beside the live blocks."""
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
