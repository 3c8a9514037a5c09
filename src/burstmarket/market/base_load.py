"""Base load blocks as the operator arranges them (with the account team): fixed nodes, fixed
term, fixed rate, one live block per cluster, within the island's reservable cap.

A block starts at once; the ticks deliver its nodes (free ones first, then taken from the
market), place the cluster's jobs on it, bill it in 5-minute steps, step it down at the end of
its term and cancel it after 24 h of a balance at or below zero (see market/tick/).
"""

from __future__ import annotations

from burstmarket.clock import NS_PER_HOUR, maybe_datetime, rfc3339, to_datetime
from burstmarket.contract import BlockView
from burstmarket.errors import Invalid, OnePerCluster
from burstmarket.market.ledger import amount
from burstmarket.market.market import Market
from burstmarket.market.model import LIVE, Block
from burstmarket.market.state import read_cluster, read_island
from burstmarket.market.tables import BLOCKS
from burstmarket.money import units_to_usd, usd
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

MAX_TERM_HOURS = 3 * 365 * 24


class BaseLoadDesk:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock

    def create(self, cluster_id: str, nodes: int, rate: int, term_hours: int) -> BlockView:
        if not 1 <= nodes <= 100_000:
            raise Invalid("nodes", "must be between 1 and 100000", nodes=nodes)
        if not 1 <= term_hours <= MAX_TERM_HOURS:
            raise Invalid(
                "term_hours",
                f"must be whole hours between 1 and {MAX_TERM_HOURS}",
                term_hours=term_hours,
            )
        with self._lock, self._db.write() as cur:
            c = read_cluster(cur, cluster_id)
            if c.kind != "k8s":
                raise Invalid(
                    "cluster",
                    "base load blocks are for Kubernetes clusters",
                    cluster=c.id,
                    kind=c.kind,
                )
            live = [b for b in self._blocks(cur, c.id) if b.state == LIVE]
            if live:
                raise OnePerCluster(
                    f"cluster {c.id} holds a live base load block until "
                    f"{rfc3339(live[0].ends_at)}; a second is refused until it ends",
                    cluster=c.id,
                    block=live[0].id,
                )
            island = read_island(cur, c.island)
            row = fetch_one(cur, "island_reserved", island=island.id)
            reserved = int(row["nodes"]) if row else 0
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
            now = self._clock.now_ns()
            block_id = f"{c.id}-bl{len(self._blocks(cur, c.id)) + 1}"
            run(
                cur,
                "insert_block",
                id=block_id,
                cluster=c.id,
                island=island.id,
                nodes=nodes,
                rate=rate,
                starts_at=now,
                ends_at=now + term_hours * NS_PER_HOUR,
            )
        return next(b for b in self.blocks(cluster_id) if b.id == block_id)

    def blocks(self, cluster_id: str) -> list[BlockView]:
        """The cluster's blocks, newest first."""
        with self._db.read() as cur:
            c = read_cluster(cur, cluster_id)
            g = read_island(cur, c.island).gpus_per_node
            return [_view(b, g) for b in self._blocks(cur, c.id)]

    def _blocks(self, cur: Cursor, cluster_id: str) -> list[Block]:
        return [BLOCKS.from_row(r) for r in fetch(cur, "cluster_blocks", cluster=cluster_id)]


def _view(b: Block, gpus_per_node: int) -> BlockView:
    gpus = b.nodes * gpus_per_node
    return BlockView(
        id=b.id,
        cluster=b.cluster,
        island=b.island,
        nodes=b.nodes,
        gpus=gpus,
        rate_per_gpu_hour=usd(b.rate),
        term_hours=(b.ends_at - b.starts_at) // NS_PER_HOUR,
        price_usd=float(units_to_usd(amount(b.rate, gpus, b.ends_at - b.starts_at))),
        starts_at=to_datetime(b.starts_at),
        ends_at=to_datetime(b.ends_at),
        state=b.state,
        ended_at=maybe_datetime(b.ended_at),
        billed_until=maybe_datetime(b.billed_until),
    )
