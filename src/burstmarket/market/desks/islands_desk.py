"""Islands: every island (public), and the operator's `PUT /api/admin/islands/{id}`, which makes
one (its size, node size and reserve required) or changes its terms, in one transaction."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import msgspec

from burstmarket.clock import NS_PER_S
from burstmarket.contract import IslandChange, IslandView
from burstmarket.errors import Conflict, Invalid
from burstmarket.history.layout import ACCOUNT_ROWS
from burstmarket.market.desks.inputs import name, node_spec, optional_price
from burstmarket.market.islands import add_nodes, create_island
from burstmarket.market.lookups import read_island
from burstmarket.market.market import Market
from burstmarket.market.model import Island
from burstmarket.market.tables import ISLAND_TERMS, ISLANDS
from burstmarket.money import usd
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

MAX_ISLAND_NODES = 100_000
"""Nodes of an island, and GPUs of a node, at most."""


@dataclass(frozen=True, slots=True)
class Terms:
    """What a PUT names of an island's terms (None: kept as they are)."""

    gpus_per_node: int | None
    nodes: int | None
    reserve_price: int | None
    node_spec: str | msgspec.UnsetType | None
    """As JSON text; None removes it, UNSET keeps it."""
    base_load_cap: int | None


class IslandsDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._tick_seconds = market.interval_ns / NS_PER_S

    def islands(self) -> list[IslandView]:
        with self._db.read() as cur:
            return [self._view(ISLANDS.from_row(r)) for r in fetch(cur, "islands")]

    def put(self, island_id: str, change: IslandChange) -> IslandView:
        terms = _terms(island_id, change)
        with self._lock, self._db.write() as cur:
            row = fetch_one(cur, "island", island=island_id)
            if row is None:
                _create(cur, island_id, terms, self._clock.now_ns())
            else:
                _change(cur, ISLANDS.from_row(row), terms)
        with self._db.read() as cur:
            return self._view(read_island(cur, island_id))

    def _view(self, island: Island) -> IslandView:
        return IslandView(
            id=island.id,
            gpus_per_node=island.gpus_per_node,
            nodes=island.nodes,
            reserve_price=usd(island.reserve_price),
            node_spec=None if island.node_spec is None else json.loads(island.node_spec),
            base_load_cap=island.base_load_cap,
            buying_open=island.buying_open,
            tick_seconds=self._tick_seconds,
        )


def _terms(island_id: str, change: IslandChange) -> Terms:
    """The input checks of a PUT, before anything is read."""
    reserve_price = optional_price("reserve_price", change.reserve_price)
    spec = change.node_spec
    if spec is not msgspec.UNSET:
        spec = None if node_spec(spec) is None else json.dumps(spec)
    name("id", island_id)
    for field, value in (("gpus_per_node", change.gpus_per_node), ("nodes", change.nodes)):
        if value is not None and not 1 <= value <= MAX_ISLAND_NODES:
            raise Invalid(field, f"must be between 1 and {MAX_ISLAND_NODES}")
    cap = change.base_load_cap
    if cap is not None and cap < 0:
        raise Invalid("base_load_cap", "must not be negative", base_load_cap=cap)
    return Terms(change.gpus_per_node, change.nodes, reserve_price, spec, cap)


def _create(cur: Cursor, island_id: str, terms: Terms, now: int) -> None:
    if island_id == ACCOUNT_ROWS:  # the history's partition of the ledger rows of no island
        raise Invalid("id", "is reserved for the history's ledger rows of no island")
    g, nodes, reserve = terms.gpus_per_node, terms.nodes, terms.reserve_price
    if g is None or nodes is None or reserve is None:
        raise Invalid("island", "a new island needs gpus_per_node, nodes and reserve_price")
    cap = terms.base_load_cap
    if cap is not None and cap > nodes:
        raise Invalid(
            "base_load_cap", f"must not exceed the island's {nodes} nodes", base_load_cap=cap
        )
    spec = None if terms.node_spec is msgspec.UNSET else terms.node_spec
    create_island(cur, Island(island_id, g, nodes, reserve, spec), now)
    if cap is not None:
        kept = Terms(None, None, None, msgspec.UNSET, cap)
        _change(cur, read_island(cur, island_id), kept)


def _change(cur: Cursor, island: Island, terms: Terms) -> None:
    """New terms for an island: checked against what it holds, then written."""
    changed = _changed(island, terms)
    _check_change(cur, island, changed)
    if changed.nodes > island.nodes:
        add_nodes(cur, island.id, island.nodes, changed.nodes)
    elif changed.nodes < island.nodes:
        run(cur, "delete_nodes_from", island=island.id, idx=changed.nodes)
    ISLANDS.update(cur, [changed], ISLAND_TERMS)


def _changed(island: Island, terms: Terms) -> Island:
    """The island with the terms the PUT names."""
    return replace(
        island,
        gpus_per_node=island.gpus_per_node if terms.gpus_per_node is None else terms.gpus_per_node,
        nodes=island.nodes if terms.nodes is None else terms.nodes,
        reserve_price=island.reserve_price if terms.reserve_price is None else terms.reserve_price,
        node_spec=island.node_spec if terms.node_spec is msgspec.UNSET else terms.node_spec,
        base_load_cap=island.base_load_cap if terms.base_load_cap is None else terms.base_load_cap,
    )


def _check_change(cur: Cursor, island: Island, changed: Island) -> None:
    """Its node size changes only with nothing held or asked for; it never shrinks below a node
    held; its base load cap fits its nodes."""
    busy = fetch_one(cur, "island_busy", island=island.id) or {}
    held, highest = busy.get("held") or 0, busy.get("highest_held")
    if changed.gpus_per_node != island.gpus_per_node:
        demand = fetch_one(cur, "island_demand", island=island.id)
        if held or (demand and demand["clusters"]):
            raise Conflict(
                "gpus_per_node can change only on an island with no holdings or demand",
                island=island.id,
            )
    if changed.nodes < island.nodes and highest is not None and highest >= changed.nodes:
        raise Conflict(
            f"node index {highest} is held; the island cannot shrink below it",
            island=island.id,
            nodes=changed.nodes,
        )
    if changed.base_load_cap > changed.nodes:
        raise Invalid(
            "base_load_cap",
            f"must not exceed the island's {changed.nodes} nodes",
            base_load_cap=changed.base_load_cap,
        )
