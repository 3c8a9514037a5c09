"""Operator node actions: cordon (health check), dark (kubelet lost), uncordon (cleared).

Out of service a node stays with its cluster, unbilled and not contestable: its billing stops
at once (ledger.stop_billing) and its commitment is released. Inside an open window the cluster
is owed a replacement until the window ends, or, for an idle node, until it would have been
released idle (the tick grants it ahead of bids, inheriting the window and the locked price);
with no window left a Kubernetes job's missing node bids again and a VM cluster's declaration
asks for it again. A base load node is replaced by its block's delivery and keeps billing with
the block. Uncordon returns the node to its cluster, billed from that moment, as idle capacity
(it competes at its locked price like any idle node outside a window and is released after the
idle grace unless a job takes it), or to its job if the replacement never came; a node nobody
holds is simply free again (docs/market.md "Nodes out of service").
"""

from __future__ import annotations

from burstmarket.clock import maybe_datetime, rfc3339
from burstmarket.contract import NodeView
from burstmarket.errors import Invalid, NotFound
from burstmarket.market.kinds import KINDS
from burstmarket.market.ledger import Entry, stop_billing
from burstmarket.market.lookups import cluster_nodes, read_cluster, read_island
from burstmarket.market.market import Market
from burstmarket.market.model import CORDONED, DARK, Cluster, Island, JobEvent, Node
from burstmarket.market.tables import JOB_EVENTS, LEDGER, NODE_STATE, NODES
from burstmarket.money import maybe_usd
from burstmarket.states import NodeState, OutOfService
from burstmarket.store.rows import Cursor, fetch, fetch_one

ACTIONS: dict[str, OutOfService | None] = {"cordon": CORDONED, "dark": DARK, "uncordon": None}
EVENTS = {CORDONED: "NodeCordoned", DARK: "NodeDark"}


class NodeActions:
    def __init__(self, market: Market) -> None:
        """The parts of `market` it uses (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures

    def act(self, island_id: str, node_id: str, action: str) -> NodeView:
        if action not in ACTIONS:
            raise Invalid("action", f"must be one of {', '.join(ACTIONS)}", action=action)
        state = ACTIONS[action]
        with self._lock:
            with self._db.write() as cur:
                island = read_island(cur, island_id)
                n = self._node(cur, island.id, node_id)
                now = self._clock.now_ns()
                events: list[JobEvent] = []
                if state is None:
                    entries = self._back(cur, island, n, now)
                else:
                    entries = self._out(cur, island, n, state, now, events)
                LEDGER.insert(cur, entries)
                NODES.update(cur, [n], NODE_STATE)
                JOB_EVENTS.insert(cur, events)
            self._figures.fold(entries)
        return self.node(island_id, node_id)

    def _out(
        self,
        cur: Cursor,
        island: Island,
        n: Node,
        state: OutOfService,
        now: int,
        events: list[JobEvent],
    ) -> list[Entry]:
        if n.service is not None:
            n.service = state  # already out of service: only the reason changes
            return []
        n.service = state
        if n.cluster is None:
            return []
        c = read_cluster(cur, n.cluster)
        entries: list[Entry] = []
        if n.block is None:
            entries = self._stop_billing(c, island, n, now)
            owed = n.window_ends_at if n.window_open(now) else None
            if owed is not None and n.job is None and n.idle_since is not None:
                # idle: the right lasts as long as the node would have stayed in service
                owed = min(owed, n.idle_release_at(island.reserve_price))
            n.owed_until = owed if owed is not None and owed > now else None
        if n.job is not None:
            note = (
                ""
                if n.owed_until is None
                else f"; a replacement is owed until {rfc3339(n.owed_until)}"
            )
            detail = f"node {n.id} is out of service ({state}){note}"
            events.append(JobEvent(c.id, n.job, now, EVENTS[state], detail))
        return entries

    def _stop_billing(self, c: Cluster, island: Island, n: Node, now: int) -> list[Entry]:
        rate = self._figures.rate(island.id, c.id)
        billed = self._figures.billed(island.id)
        return stop_billing(now, c.account, c.id, n, island.gpus_per_node, rate, billed)

    def _back(self, cur: Cursor, island: Island, n: Node, now: int) -> list[Entry]:
        if n.service is None:
            return []
        n.service = None
        if n.cluster is None or n.block is not None:
            # free again, or back to its block (over its size the tick hands it to the
            # cluster's market holdings as idle capacity)
            n.job, n.idle_since = None, now
            return []
        c = read_cluster(cur, n.cluster)
        owed, n.owed_until = n.owed(now), None
        declared = KINDS[c.kind].declared_nodes(c, island.gpus_per_node)
        if declared is not None:
            if len(cluster_nodes(cur, c.id)) >= declared:
                n.free()  # the cluster has what it declared: the node goes back to the island
                return []
        elif owed and n.job is not None and self._running(cur, c.id, n.job):
            n.idle_since = None  # its replacement never came: back to its job
        else:
            n.job, n.idle_since = None, now
            if not n.window_open(now):
                # outside any window its hour went to the replacement, or was over: it holds
                # afresh from its return, billed from now in 5-minute increments from now
                n.hold_until = now
        # the next tick commits its next hour, or releases it if that does not fit; it bills
        # from now on, as the cluster's again
        n.commit_price, n.commit_ends_at, n.billed_until = n.locked_price, now, now
        return []

    def _running(self, cur: Cursor, cluster: str, job: str) -> bool:
        row = fetch_one(cur, "job", cluster=cluster, name=job)
        return row is not None and row["state"] == "running"

    def _node(self, cur: Cursor, island: str, node_id: str) -> Node:
        row = fetch_one(cur, "node", island=island, node=node_id)
        if row is None:
            raise NotFound(f"no node {node_id!r} on island {island!r}", island=island, node=node_id)
        return NODES.from_row(row)

    # --- reads ----------------------------------------------------------------------------

    def node(self, island_id: str, node_id: str) -> NodeView:
        with self._db.read() as cur:
            island = read_island(cur, island_id)
            return _view(self._node(cur, island.id, node_id))

    def nodes(self, island_id: str) -> list[NodeView]:
        with self._db.read() as cur:
            island = read_island(cur, island_id)
            return [_view(NODES.from_row(r)) for r in fetch(cur, "island_nodes", island=island.id)]


def _view(n: Node) -> NodeView:
    state: NodeState
    if n.service is not None:
        state = n.service
    elif n.block is not None:
        state = "base_load"
    else:
        state = "free" if n.cluster is None else "held"
    return NodeView(
        id=n.id,
        idx=n.idx,
        state=state,
        cluster=n.cluster,
        job=n.job,
        block=n.block,
        granted_at=maybe_datetime(n.granted_at),
        window_ends_at=maybe_datetime(n.window_ends_at),
        locked_price=maybe_usd(n.locked_price),
        replacement_owed_until=maybe_datetime(n.owed_until),
    )
