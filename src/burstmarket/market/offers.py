"""An island's posted base load offers (docs/market.md "Buying"): the grid the operator posts
(sizes in whole nodes × terms, each cell at a rate per GPU-hour), kept in `base_load_offers`,
and the state of a cell as a tenant reads it, computed from the island's live blocks now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from burstmarket.clock import NS_PER_HOUR
from burstmarket.market.ledger import amount
from burstmarket.market.model import Block, Island, Offer
from burstmarket.market.tables import BLOCKS, OFFERS
from burstmarket.store.rows import Cursor, fetch, run

AVAILABLE = "available"
SOLD_OUT = "sold-out"
NOT_AVAILABLE = "not-available"


@dataclass(frozen=True, slots=True)
class CellState:
    state: str
    until: int | None = None
    """For a size that does not fit now: when enough live blocks end for it to fit."""


def cell_state(
    offer: Offer | None, size_gpus: int, island: Island, live: Sequence[Block]
) -> CellState:
    """A size larger than the island's reservable inventory is not available there; a cell
    nobody posted a rate for (or whose rate the reserve has overtaken) is sold out; a size the
    inventory cannot hold beside the live blocks is sold out until enough of them end."""
    nodes = size_gpus // island.gpus_per_node
    if nodes > island.base_load_cap:
        return CellState(NOT_AVAILABLE)
    if offer is None or offer.rate is None or offer.rate < island.reserve_price:
        return CellState(SOLD_OUT)
    until = fits_at(nodes, island.base_load_cap, live)
    return CellState(AVAILABLE) if until is None else CellState(SOLD_OUT, until)


def fits_at(nodes: int, cap: int, live: Sequence[Block]) -> int | None:
    """None when `nodes` more fit the reservable `cap` beside the `live` blocks now; else the
    end of the live block whose lapse (with those ending before it) makes room. Every size up
    to the cap fits once all of them lapse."""
    need = sum(b.nodes for b in live) + nodes - cap
    if need <= 0:
        return None
    for b in sorted(live, key=lambda b: (b.ends_at, b.id)):
        need -= b.nodes
        if need <= 0:
            return b.ends_at
    raise ValueError(f"{nodes} nodes never fit a reservable inventory of {cap}")


def price(rate: int, size_gpus: int, term_hours: int) -> int:
    """The whole block's price in ledger units: rate × GPUs × term."""
    return amount(rate, size_gpus, term_hours * NS_PER_HOUR)


def read_offers(cur: Cursor, island: str) -> list[Offer]:
    """The island's cells, by size then term."""
    return [OFFERS.from_row(r) for r in fetch(cur, "island_offers", island=island)]


def replace_offers(cur: Cursor, island: str, cells: list[Offer]) -> None:
    """The island's grid becomes `cells`, as a whole."""
    run(cur, "delete_offers", island=island)
    OFFERS.insert(cur, cells)


def live_blocks(cur: Cursor, island: str) -> list[Block]:
    return [BLOCKS.from_row(r) for r in fetch(cur, "island_blocks", island=island)]
