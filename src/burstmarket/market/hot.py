"""What VM declarations read and write, kept in memory by the store's group-commit writer.

A declaration reads its cluster, its island and the nodes it holds, and writes its demand, the
nodes it releases and their ledger rows. Read from DuckDB and written a statement at a time that
cost ~20 ms a declaration, all of it holding the one writer. Here the rows are read once and
kept; each declaration changes the kept copy and stages its rows; the batch writes what its
declarations staged in one statement per table just before its COMMIT (store/writer.py).

Only the writer touches this, inside a Batch (holding the writer lock). The copy is true as of
the store's `epoch`: anything written around it (an operator action, a Kubernetes job) moves the
epoch and the next batch starts from an empty copy, made an island at a time in three reads. A
tick hands over what it changed (`after_tick`), so the copy survives the ticks.
"""

from __future__ import annotations

from dataclasses import replace

from burstmarket.market.figures import Figures
from burstmarket.market.ledger import Entry
from burstmarket.market.lock import MarketLock
from burstmarket.market.lookups import read_cluster, read_island
from burstmarket.market.model import Cluster, Island, Node
from burstmarket.market.tables import CLUSTER_DEMAND, CLUSTERS, LEDGER, NODE_STATE, NODES
from burstmarket.store import Batch, Database
from burstmarket.store.rows import Cursor, fetch_rows


class Hot:
    def __init__(self, db: Database, figures: Figures, lock: MarketLock) -> None:
        self.db = db
        self._figures = figures
        """Balances the batch's committed ledger rows are folded into."""
        self._lock = lock
        """Told of the demand the batch committed, for a tick in flight."""
        self.epoch = -1
        self.islands: dict[str, Island] = {}
        self.clusters: dict[str, tuple[Cluster, list[Node]]] = {}
        """Every cluster of every island in `islands`, with the nodes it holds in service."""
        self._home: dict[str, str] = {}
        """cluster -> island (a cluster never moves, so this outlives the copy)."""
        # staged by this batch's declarations, written just before its COMMIT
        self._demand: dict[str, Cluster] = {}
        self._nodes: dict[str, Node] = {}
        self._ledger: list[Entry] = []
        self._committing: list[Entry] = []
        """Ledger rows written by this batch: folded into the balances once it commits."""
        self._declared: list[Cluster] = []
        """Demand written by this batch: told to a tick in flight once it commits."""

    def begin(self, batch: Batch) -> None:
        """Join `batch` (every declaration calls this first)."""
        if self.epoch != self.db.epoch:
            self.islands.clear()
            self.clusters.clear()
            self.epoch = self.db.epoch
        batch.before_commit(self.flush)
        batch.after_commit(self._committed)
        batch.on_rollback(self._forget)

    def cluster(self, cur: Cursor, cluster_id: str) -> tuple[Cluster, list[Node]]:
        """The cluster and the nodes it holds in service (changed in place by declarations)."""
        kept = self.clusters.get(cluster_id)
        if kept is None:
            island = self._home.get(cluster_id) or read_cluster(cur, cluster_id).island
            self._load(cur, island)
            kept = self.clusters[cluster_id]
        return kept

    def island(self, cur: Cursor, island_id: str) -> Island:
        if island_id not in self.islands:
            self._load(cur, island_id)
        return self.islands[island_id]

    def _load(self, cur: Cursor, island_id: str) -> None:
        """Copy a whole island in three reads: after a tick or any other write, the first
        declaration pays for every cluster of its island, not one pair of reads per cluster."""
        self.islands[island_id] = read_island(cur, island_id)
        held: dict[str, list[Node]] = {}
        for c in CLUSTERS.from_tuples(*fetch_rows(cur, "island_clusters", island=island_id)):
            self.clusters[c.id] = (c, held.setdefault(c.id, []))
            self._home[c.id] = island_id
        for n in NODES.from_tuples(*fetch_rows(cur, "island_nodes", island=island_id)):
            if n.cluster is not None and n.service is None:
                held[n.cluster].append(n)

    def stage_demand(self, c: Cluster) -> None:
        self._demand[c.id] = c

    def stage_nodes(self, nodes: list[Node], entries: list[Entry]) -> None:
        """Nodes changed in memory, and their ledger rows, to write with the batch."""
        self._nodes.update((n.id, n) for n in nodes)
        self._ledger += entries

    def stage_release(self, c: Cluster, released: list[Node], entries: list[Entry]) -> None:
        """`released` (already freed in memory) leave the cluster's kept holdings."""
        _, held = self.clusters[c.id]
        gone = {n.id for n in released}
        held[:] = [n for n in held if n.id not in gone]
        self.stage_nodes(released, entries)

    def written(self) -> list[Entry]:
        """Ledger rows the batch in progress has written and not committed yet (none outside a
        batch: only the writer, holding it, asks)."""
        return self._committing

    def flush(self, cur: Cursor) -> None:
        """Write what is staged (before COMMIT, or before a read of the ledger in the batch)."""
        # ledger first, as everywhere: the money side of a change is written before the change
        LEDGER.insert(cur, self._ledger)
        NODES.update(cur, list(self._nodes.values()), NODE_STATE)
        CLUSTERS.update(cur, list(self._demand.values()), CLUSTER_DEMAND)
        self._committing += self._ledger
        self._declared += self._demand.values()
        self._ledger = []
        self._demand.clear()
        self._nodes.clear()

    def after_tick(
        self, island_id: str, epoch_before: int, nodes: list[Node], changed: list[Cluster]
    ) -> None:
        """A tick of `island_id` committed (the one write since `epoch_before`), leaving the
        island's `nodes` (all of them) and the cluster state it `changed`. A tick never writes
        demand, so the copy of the island stays true with those two folded in: no reads."""
        if self.epoch != epoch_before:
            return  # the copy was already stale
        self.epoch = self.db.epoch
        if island_id not in self.islands:
            return
        held = {c: kept[1] for c, kept in self.clusters.items() if self._home[c] == island_id}
        for c in changed:
            kept, _ = self.clusters[c.id]
            kept.spend_window_start, kept.pending_reason = c.spend_window_start, c.pending_reason
            kept.pending_detail = c.pending_detail
            kept.bid_too_low = c.bid_too_low
        for nodes_of_cluster in held.values():
            nodes_of_cluster.clear()
        for n in sorted(nodes, key=lambda n: n.idx):
            if n.cluster is not None and n.service is None:
                held[n.cluster].append(replace(n))  # a copy: the tick's objects stay its own

    def _committed(self) -> None:
        # the batch's own commit moved the epoch; the copy already has its changes
        self.epoch = self.db.epoch
        self._figures.fold(self._committing)
        for c in self._declared:
            self._lock.declared(c.island, c.id, c.max_gpus)
        self._committing = []
        self._declared = []

    def _forget(self) -> None:
        """The batch rolled back: the copy may hold its changes, so it goes."""
        self.epoch = -1
        self._demand.clear()
        self._nodes.clear()
        self._ledger = []
        self._committing = []
        self._declared = []
