"""The ledger rows a tick writes, and the spend guard's tallies it writes them from."""

from __future__ import annotations

from collections import defaultdict

from burstmarket.market.guard import window_open
from burstmarket.market.ledger import BALANCE, HOLD, Entry, amount, period_entry
from burstmarket.market.model import K8S_INCREMENT_NS, Cluster, Node
from burstmarket.market.tick.types import TickInput
from burstmarket.states import LedgerKind


class Books:
    def __init__(self, inp: TickInput, changed_clusters: dict[str, Cluster]) -> None:
        self.t = inp.time
        self.g = inp.island.gpus_per_node
        self.island = inp.island.id
        self.tick = inp.tick
        self.rates = inp.rates
        self.balances = inp.balances
        self.ledger: list[Entry] = []
        self.committed: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
        """Cluster -> (GPUs, units) of worst cases committed this tick (one row each, at the
        end: billing.charge)."""
        self.released: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
        """Cluster -> (GPUs, units) of commitments released this tick."""
        self._changed_clusters = changed_clusters

    def bill(
        self,
        kind: LedgerKind,
        c: Cluster,
        start: int,
        end: int,
        gpus: int,
        rate: int,
        node: str | None = None,
        block: str | None = None,
    ) -> None:
        """A billed row: `gpus` GPUs at `rate` over [start, end)."""
        t, island, tick = self.t, self.island, self.tick
        row = period_entry(
            kind,
            t,
            c.account,
            c.id,
            island,
            start,
            end,
            gpus,
            rate,
            tick=tick,
            node=node,
            block=block,
        )
        self.ledger.append(row)

    def balance(self, account: str) -> int:
        """The account's credit left with the rows this tick wrote so far (ledger units)."""
        billed = sum(e.units for e in self.ledger if e.account == account and e.kind in BALANCE)
        return self.balances.get(account, 0) - billed

    def record(
        self, c: Cluster, kind: LedgerKind, units: int, gpus: int = 0, block: str | None = None
    ) -> None:
        """A row with no period: the spend guard's (commitment, release), or a base load
        purchase's deposit given back or receivable closed."""
        self.ledger.append(
            Entry(
                at=self.t,
                account=c.account,
                kind=kind,
                units=units,
                cluster=c.id,
                island=self.island,
                tick=self.tick,
                gpus=gpus,
                block=block,
            )
        )

    def commit(self, c: Cluster, units: int, nodes: int = 1) -> None:
        """The worst case of `nodes` nodes, committed before they are visible (same
        transaction)."""
        gpus, total = self.committed[c.id]
        self.committed[c.id] = (gpus + nodes * self.g, total + units)

    def release_commitment(self, n: Node) -> None:
        ends = n.commit_ends_at or 0
        if n.commit_price is not None and ends > self.t:
            gpus, units = self.released[n.cluster or ""]
            left = amount(n.commit_price, self.g, ends - self.t)
            self.released[n.cluster or ""] = (gpus + self.g, units + left)

    def minimum_hold(self, c: Cluster, n: Node) -> None:
        """A Kubernetes node bills at least its hold, then in whole 5-minute increments from the
        end of it (from the grant, for a node with no hold: one stepping down from a block). A
        node back from the operator outside any window holds from its return (nodes.py), so
        its increments count from there, not from a grant whose hour went to its replacement."""
        since = n.granted_at if n.hold_until is None else n.hold_until
        assert since is not None
        increments = max(0, -(-(self.t - since) // K8S_INCREMENT_NS))
        end = since + increments * K8S_INCREMENT_NS
        if end <= self.t:
            return
        rate = self.rates.get(c.id, n.locked_price or 0)
        self.bill(HOLD, c, self.t, end, self.g, rate, node=n.id)

    def spend_started(self, c: Cluster) -> None:
        """The rolling 24 h spend window starts at the first spend, not at midnight."""
        if not window_open(c.spend_window_start, self.t):
            c.spend_window_start = self.t
            self._changed_clusters[c.id] = c
