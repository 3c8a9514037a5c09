"""What the operator token may do: accounts and their credit, clusters, islands; node actions
(`nodes`, market/nodes.py) and base load blocks (`base_load`, market/base_load.py)."""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, get_args

from burstmarket.clock import to_datetime
from burstmarket.contract import AccountView, ClusterCreatedView, IslandView, ReceivableView
from burstmarket.errors import Conflict, Invalid, NotFound
from burstmarket.market.base_load import BaseLoadDesk
from burstmarket.market.figures import token_hash
from burstmarket.market.ledger import DEPOSIT, Entry
from burstmarket.market.market import Market
from burstmarket.market.model import Island
from burstmarket.market.nodes import NodeActions
from burstmarket.market.purchases import open_receivables, wired
from burstmarket.market.state import add_nodes, create_island, read_island
from burstmarket.market.tables import ISLAND_TERMS, ISLANDS, LEDGER
from burstmarket.money import LEDGER_UNITS_PER_MICRO, units_to_usd, usd
from burstmarket.states import Kind
from burstmarket.store.rows import Cursor, fetch, fetch_one, run

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
KINDS: tuple[Kind, ...] = get_args(Kind)


def _name(field: str, value: str) -> str:
    if not NAME.match(value):
        raise Invalid(field, "must be 1-63 lowercase letters, digits or '-'")
    return value


class Operator:
    def __init__(self, market: Market) -> None:
        """The parts of `market` the operator's requests use (it keeps no reference to it)."""
        self._db = market.db
        self._clock = market.clock
        self._lock = market.lock
        self._figures = market.figures
        self.nodes = NodeActions(market)
        self.base_load = BaseLoadDesk(market)

    # --- accounts -------------------------------------------------------------------------

    def create_account(self, name: str, balance: int) -> AccountView:
        _name("name", name)
        with self._lock:
            with self._db.write() as cur:
                if fetch_one(cur, "account", name=name) is not None:
                    raise Conflict(f"account {name!r} exists", account=name)
                now = self._clock.now_ns()
                run(cur, "insert_account", name=name, created_at=now)
                entries = self._deposit(cur, name, balance, now)
            self._figures.fold(entries)
        return self.account(name)

    def credit(self, name: str, amount: int) -> AccountView:
        """Add (or, negative, correct) credit: a new ledger row, never an edit."""
        if amount == 0:
            raise Invalid("amount_usd", "must not be 0")
        with self._lock:
            with self._db.write() as cur:
                self._account(cur, name)
                entries = self._deposit(cur, name, amount, self._clock.now_ns())
            self._figures.fold(entries)
        return self.account(name)

    def _deposit(self, cur: Cursor, name: str, micros: int, now: int) -> list[Entry]:
        if not micros:
            return []
        entries = [
            Entry(at=now, account=name, kind=DEPOSIT, units=-micros * LEDGER_UNITS_PER_MICRO)
        ]
        LEDGER.insert(cur, entries)
        return entries

    def wire(self, name: str, amount: int) -> AccountView:
        """Money received by wire: credit, applied to the account's base load receivables, the
        earliest due first; a receivable paid in full gives its security deposit back
        (market/purchases.py). What no receivable takes is plain credit."""
        if amount <= 0:
            raise Invalid("amount_usd", "must be greater than 0", amount_usd=usd(amount))
        with self._lock:
            with self._db.write() as cur:
                self._account(cur, name)
                now = self._clock.now_ns()
                owing = open_receivables(cur, name)
                entries = wired(now, name, amount * LEDGER_UNITS_PER_MICRO, owing)
                LEDGER.insert(cur, entries)
            self._figures.fold(entries)
        return self.account(name)

    def _account(self, cur: Cursor, name: str) -> None:
        if fetch_one(cur, "account", name=name) is None:
            raise NotFound(f"no account {name!r}", account=name)

    def account(self, name: str) -> AccountView:
        """The balance, and what the account owes by wire for base load, overdue included."""
        with self._db.read() as cur:
            self._account(cur, name)
            clusters = [r["id"] for r in fetch(cur, "account_clusters", account=name)]
            owing = open_receivables(cur, name)
        balance = self._figures.balance(name)
        now = self._clock.now_ns()
        receivables = [
            ReceivableView(
                purchase=r.purchase,
                cluster=r.cluster,
                owed_usd=float(units_to_usd(r.owed)),
                owed_by=to_datetime(r.due),
                overdue=now >= r.due,
                deposit_held_usd=float(units_to_usd(r.deposit_held)),
            )
            for r in owing
        ]
        return AccountView(
            name=name,
            balance_usd=float(units_to_usd(balance)),
            billing_hold=balance <= 0,
            clusters=clusters,
            owed_usd=float(units_to_usd(sum(r.owed for r in owing))),
            overdue_usd=float(units_to_usd(sum(r.owed for r in owing if now >= r.due))),
            receivables=receivables,
        )

    # --- clusters -------------------------------------------------------------------------

    def create_cluster(self, account: str, island: str, kind: str, name: str) -> ClusterCreatedView:
        _name("name", name)
        if kind not in KINDS:
            raise Invalid("kind", "must be 'vm' or 'k8s'")
        token = secrets.token_urlsafe(32)
        with self._lock, self._db.write() as cur:
            self._account(cur, account)
            read_island(cur, island)
            if fetch_one(cur, "cluster", cluster=name) is not None:
                raise Conflict(f"cluster {name!r} exists", cluster=name)
            run(
                cur,
                "insert_cluster",
                id=name,
                account=account,
                island=island,
                kind=kind,
                token_hash=token_hash(token),
                created_at=self._clock.now_ns(),
            )
        self._figures.add_token(name, token)
        # the token is shown here, once; only its hash is stored
        return ClusterCreatedView(id=name, token=token, account=account, island=island, kind=kind)

    # --- islands --------------------------------------------------------------------------

    def islands(self) -> list[IslandView]:
        with self._db.read() as cur:
            return [_island_view(ISLANDS.from_row(r)) for r in fetch(cur, "islands")]

    def put_island(
        self,
        island_id: str,
        gpus_per_node: int | None,
        nodes: int | None,
        reserve_price: int | None,
        node_spec: Any,
        set_spec: bool,
        base_load_cap: int | None = None,
    ) -> IslandView:
        _name("id", island_id)
        for field, value in (("gpus_per_node", gpus_per_node), ("nodes", nodes)):
            if value is not None and not 1 <= value <= 100_000:
                raise Invalid(field, "must be between 1 and 100000")
        if base_load_cap is not None and base_load_cap < 0:
            raise Invalid("base_load_cap", "must not be negative", base_load_cap=base_load_cap)
        spec = json.dumps(node_spec) if set_spec and node_spec is not None else None
        with self._lock:
            with self._db.read() as cur:
                row = fetch_one(cur, "island", island=island_id)
            if row is None:
                if gpus_per_node is None or nodes is None or reserve_price is None:
                    raise Invalid(
                        "island", "a new island needs gpus_per_node, nodes and reserve_price"
                    )
                if base_load_cap is not None and base_load_cap > nodes:
                    raise Invalid(
                        "base_load_cap",
                        f"must not exceed the island's {nodes} nodes",
                        base_load_cap=base_load_cap,
                    )
                with self._db.write() as cur:
                    new = Island(island_id, gpus_per_node, nodes, reserve_price, spec)
                    create_island(cur, new, self._clock.now_ns())
                if base_load_cap is not None:
                    with self._db.read() as cur:
                        island = read_island(cur, island_id)
                    self._update_island(island, None, None, None, None, False, base_load_cap)
            else:
                self._update_island(
                    ISLANDS.from_row(row),
                    gpus_per_node,
                    nodes,
                    reserve_price,
                    spec,
                    set_spec,
                    base_load_cap,
                )
        with self._db.read() as cur:
            return _island_view(read_island(cur, island_id))

    def _update_island(
        self,
        island: Island,
        gpus_per_node: int | None,
        nodes: int | None,
        reserve_price: int | None,
        spec: str | None,
        set_spec: bool,
        base_load_cap: int | None,
    ) -> None:
        with self._db.write() as cur:
            busy = fetch_one(cur, "island_busy", island=island.id)
            held, highest = (busy or {}).get("held") or 0, (busy or {}).get("highest_held")
            if gpus_per_node is not None and gpus_per_node != island.gpus_per_node:
                demand = fetch_one(cur, "island_demand", island=island.id)
                if held or (demand and demand["clusters"]):
                    raise Conflict(
                        "gpus_per_node can change only on an island with no holdings or demand",
                        island=island.id,
                    )
                island.gpus_per_node = gpus_per_node
            if nodes is not None and nodes != island.nodes:
                if nodes > island.nodes:
                    add_nodes(cur, island.id, island.nodes, nodes)
                elif highest is not None and highest >= nodes:
                    raise Conflict(
                        f"node index {highest} is held; the island cannot shrink below it",
                        island=island.id,
                        nodes=nodes,
                    )
                else:
                    run(cur, "delete_nodes_from", island=island.id, idx=nodes)
                island.nodes = nodes
            if reserve_price is not None:
                island.reserve_price = reserve_price
            if set_spec:
                island.node_spec = spec
            if base_load_cap is not None:
                island.base_load_cap = base_load_cap
            if island.base_load_cap > island.nodes:
                raise Invalid(
                    "base_load_cap",
                    f"must not exceed the island's {island.nodes} nodes",
                    base_load_cap=island.base_load_cap,
                )
            ISLANDS.update(cur, [island], ISLAND_TERMS)


def _island_view(island: Island) -> IslandView:
    return IslandView(
        id=island.id,
        gpus_per_node=island.gpus_per_node,
        nodes=island.nodes,
        reserve_price=usd(island.reserve_price),
        node_spec=None if island.node_spec is None else json.loads(island.node_spec),
        base_load_cap=island.base_load_cap,
        buying_open=island.buying_open,
    )
