"""The simulated market's population and its operator, over the HTTP API.

`World.setup` makes sure the islands, accounts and clusters exist (the operator's endpoints),
remembering each cluster's token in `<data dir>/simulation.json` so a restart on the same data
dir picks up the same tenants, and posts the base load offers (buying open, packing enabled for
the tenant that buys a block); `World.start` starts the tenants at the first tick's time.
`World.step` is one tick of market time: the operator changes a reserve now and then and tops
up accounts, then every tenant acts.

With `make_yours`, setup also makes the tenants of the person running the demo (`serve
--simulate`): a VM and a Kubernetes cluster on each island, of the account `you`, funded and
otherwise as a new cluster is. Nothing of the simulation acts for them afterwards, not even the
top-ups: they are never among `World.tenants` (docs/first-five-minutes.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import httpx

from burstmarket.client import ClientError, OperatorClient, Refused, TenantClient
from burstmarket.simulation import population
from burstmarket.simulation.population import ISLANDS, OFFERS, IslandPlan, TenantSpec
from burstmarket.simulation.tenants import SimulatedTenant, make_tenant
from burstmarket.states import Kind

log = logging.getLogger(__name__)

KINDS: tuple[Kind, ...] = ("vm", "k8s")
STATE_FILE = "simulation.json"
OPENING_BALANCE_USD = Decimal(1_000_000)
TOP_UP_BELOW_USD = Decimal(200_000)
RESERVE_CHANGES_PER_HOUR = 1 / 3
"""Per island: the simulated operator moves the reserve about every three hours."""
RESERVE_RANGE = (0.8, 1.25)
"""A new reserve is the island's planned reserve times a factor in this range."""
YOUR_ACCOUNT = "you"
YOUR_BALANCE_USD = Decimal(100_000)
"""Enough to buy any posted base load block outright (the largest, 64 GPUs for 30 days on
`ref`, is 59,904 USD) and hold market capacity for days besides."""


@dataclass(frozen=True, slots=True)
class Yours:
    """A tenant of the person running the demo: the simulation only creates it."""

    name: str
    island: str
    kind: Kind


class World:
    def __init__(
        self,
        base_url: str,
        operator_token: str,
        data_dir: Path,
        *,
        http: httpx.AsyncClient,
        seed: int = 1,
        reconsider: timedelta = timedelta(minutes=5),
        make_yours: bool = False,
    ) -> None:
        self.base_url = base_url
        self.http = http
        self.operator = OperatorClient(base_url, operator_token, http=http)
        self.state_path = data_dir / STATE_FILE
        self.seed = seed
        self.reconsider = reconsider
        """Mean market time between two sizing decisions of a VM tenant: often enough that a
        live market moves tick by tick; `simulate` sets it longer, as each decision costs it
        requests and it runs a day in seconds."""
        self.rng = random.Random(seed + 1)  # noqa: S311 (a simulation, not a secret)
        self.plans: list[IslandPlan] = []
        self.tenants: list[SimulatedTenant] = []
        self.make_yours = make_yours
        """Make the demo person's own tenants too (`serve --simulate`; `simulate` has no one
        to play)."""
        self._created: list[tuple[TenantSpec, str]] = []
        """What `setup` made sure exists: each tenant and its cluster token."""
        self.your_tenants: list[tuple[Yours, str]] = []
        """The person's own tenants and their tokens, once set up (with `make_yours`)."""
        self._state: dict[str, dict[str, str]] = {}
        """What the state file holds (`_load_state`)."""
        self._accounts_made: set[str] = set()
        """Accounts this setup made or found made (not asked for again)."""
        self._next_top_up: datetime | None = None

    async def setup(self) -> None:
        """Create what is missing: islands, accounts, clusters; post the base load offers."""
        existing = {i.id: i for i in await self.operator.islands()}
        for plan in ISLANDS:
            found = existing.get(plan.id)
            if found is None:
                found = await self.operator.put_island(
                    plan.id,
                    gpus_per_node=plan.gpus_per_node,
                    nodes=plan.nodes,
                    reserve_price=plan.reserve_price,
                )
            # size the population to the island as it is (an operator may have changed it)
            self.plans.append(
                IslandPlan(plan.id, found.nodes, found.gpus_per_node, plan.reserve_price)
            )
        state = self._state = self._load_state()
        specs = population.draw(self.seed, self.plans)
        for spec in specs:
            token = await self._cluster(
                state["tokens"], spec.name, spec.account, spec.island, spec.kind
            )
            self._created.append((spec, token))
        if self.make_yours:
            # kept apart from `tokens`: a data dir from before they existed gains them here
            for plan in self.plans:
                for kind in KINDS:
                    yours = Yours(f"{YOUR_ACCOUNT}-{plan.id}-{kind}", plan.id, kind)
                    token = await self._cluster(
                        state["yours"], yours.name, YOUR_ACCOUNT, plan.id, kind, YOUR_BALANCE_USD
                    )
                    self.your_tenants.append((yours, token))
        for offer in OFFERS:
            if any(p.id == offer.island for p in self.plans):
                await self.operator.post_offers(
                    offer.island,
                    offer.cells,
                    buying_open=True,
                    reservable_nodes=offer.reservable_nodes,
                )
        for spec in specs:
            if spec.base_load is not None:
                await self.operator.set_packing(spec.name, True)

    def console_tenants(self) -> list[tuple[TenantSpec, str]]:
        """Whom a person running the demo signs in as on the console, with their tokens: the
        first VM tenant, and the Kubernetes tenant that buys base load (so the page shows a
        block), else the first Kubernetes one."""
        created = self._created
        vm = next((c for c in created if c[0].kind == "vm"), None)
        k8s = next((c for c in created if c[0].base_load is not None), None) or next(
            (c for c in created if c[0].kind == "k8s"), None
        )
        return [c for c in (vm, k8s) if c is not None]

    async def start(self, now: datetime) -> None:
        """Start every simulated tenant (set up first); never the person's own."""
        for spec, token in self._created:
            client = TenantClient(self.base_url, token, http=self.http)
            rng = random.Random(f"{self.seed}:{spec.name}")  # noqa: S311 (not a secret)
            tenant = make_tenant(spec, client, rng, self.reconsider)
            await tenant.start(now)
            self.tenants.append(tenant)
        log.info(
            "simulation: %d tenants on islands %s",
            len(self.tenants),
            ", ".join(p.id for p in self.plans),
        )

    async def _cluster(
        self,
        kept: dict[str, str],
        name: str,
        account: str,
        island: str,
        kind: Kind,
        balance: Decimal = OPENING_BALANCE_USD,
    ) -> str:
        """The token of the cluster `name`: the one kept in the state file, else that of a new
        cluster (and its account, unless another of its clusters made it), kept at once."""
        if name in kept:
            return kept[name]
        if account not in self._accounts_made:
            try:
                await self.operator.create_account(account, balance)
            except Refused as refused:
                if refused.code != "conflict":  # another of its clusters made it already
                    raise
            self._accounts_made.add(account)
        kept[name] = (await self.operator.create_cluster(account, island, kind, name)).token
        self._save_state()
        return kept[name]

    def _load_state(self) -> dict[str, dict[str, str]]:
        """The cluster tokens kept: `tokens` the simulated tenants', `yours` the person's own
        (a file from before those existed has none)."""
        state: dict[str, dict[str, str]] = {"tokens": {}, "yours": {}}
        if self.state_path.exists():
            state.update(json.loads(self.state_path.read_text()))
        return state

    def _save_state(self) -> None:
        """Atomically, readable by the owner only: the file holds cluster tokens."""
        temp = self.state_path.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(self._state, out, indent=1)
        os.replace(temp, self.state_path)

    async def step(self, now: datetime, dt: timedelta) -> None:
        """One tick of market time. A tenant whose request fails on the way (the server busy
        or restarting) just sits this step out."""
        try:
            await self._operate(now, dt)
        except ClientError as error:
            log.warning("simulation: operator: %s", error)
        # tenants act at once, as independent tenants do (and the service overlaps their reads)
        await asyncio.gather(*(self._act(tenant, now, dt) for tenant in self.tenants))

    async def _act(self, tenant: SimulatedTenant, now: datetime, dt: timedelta) -> None:
        try:
            await tenant.step(now, dt)
        except Refused as refused:
            log.debug("simulation: %s refused: %s", tenant.spec.name, refused)
        except ClientError as error:
            log.warning("simulation: %s: %s", tenant.spec.name, error)

    async def _operate(self, now: datetime, dt: timedelta) -> None:
        for plan in self.plans:
            chance = 1 - math.exp(-RESERVE_CHANGES_PER_HOUR * dt.total_seconds() / 3600)
            if self.rng.random() < chance:
                reserve = round(plan.reserve_price * self.rng.uniform(*RESERVE_RANGE), 2)
                await self.operator.put_island(plan.id, reserve_price=reserve)
                log.info("simulation: operator sets island %s reserve to %.2f", plan.id, reserve)
        if self._next_top_up is None or now >= self._next_top_up:
            self._next_top_up = now + timedelta(days=1)
            for account in sorted({t.spec.account for t in self.tenants}):
                balance = (await self.operator.account(account)).balance_usd
                if balance < TOP_UP_BELOW_USD:
                    await self.operator.credit(account, OPENING_BALANCE_USD - balance)
