"""An island's rows as it is made or grows: the island and its free nodes (the operator's
`PUT /api/admin/islands/{id}`, market/desks/islands_desk.py; the first island of a new store,
market/market.py)."""

from __future__ import annotations

from burstmarket.market.model import Island, Node
from burstmarket.market.tables import NODES
from burstmarket.store.rows import Cursor, run


def node_id(island: str, idx: int) -> str:
    return f"{island}-n{idx:04d}"


def create_island(cur: Cursor, new: Island, at: int) -> None:
    run(
        cur,
        "insert_island",
        id=new.id,
        gpus_per_node=new.gpus_per_node,
        nodes=new.nodes,
        reserve_price=new.reserve_price,
        node_spec=new.node_spec,
        created_at=at,
    )
    add_nodes(cur, new.id, 0, new.nodes)


def add_nodes(cur: Cursor, island_id: str, start: int, stop: int) -> None:
    """Free nodes `start` .. `stop` - 1 of the island."""
    # no holder, job, grant, window, hold, idle time, locked price or commitment
    free = [Node(island_id, node_id(island_id, i), i, *[None] * 9) for i in range(start, stop)]
    NODES.insert(cur, free)
