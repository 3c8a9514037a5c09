"""The desks: what each API call asks of the market, one desk per concern, each built from the
parts of the market it uses (market/market.py) and keeping no reference to the market.

A desk method takes the request's contract Struct as decoded (contract.py; a field a change
leaves out is `msgspec.UNSET`), reads its figures first (inputs.py), then works in one read or
one exclusive section, and answers with the contract's view. `Tenant` and `Operator` are the
two faces the API holds: which desks a cluster token reaches (api/tenant.py) and which the
operator token does (api/operator.py)."""

from __future__ import annotations

from burstmarket.market.desks.accounts_desk import AccountsDesk
from burstmarket.market.desks.base_load_desk import BaseLoadDesk
from burstmarket.market.desks.billing_desk import BillingDesk
from burstmarket.market.desks.clusters_desk import ClustersDesk
from burstmarket.market.desks.islands_desk import IslandsDesk
from burstmarket.market.desks.jobs_desk import JobsDesk
from burstmarket.market.desks.ladder_desk import LadderDesk
from burstmarket.market.desks.node_actions import NodeActions
from burstmarket.market.desks.own_account_desk import OwnAccountDesk
from burstmarket.market.desks.spend_guard import SpendGuard
from burstmarket.market.desks.vm_desk import VmDesk
from burstmarket.market.market import Market


class Tenant:
    """What a cluster's token reaches."""

    def __init__(self, market: Market) -> None:
        self.spend_guard = SpendGuard(market)
        """The spend limit, and the checks the desks below run on new demand."""
        self.clusters = ClustersDesk(market)
        self.vm = VmDesk(market, self.spend_guard)
        self.jobs = JobsDesk(market, self.spend_guard)
        self.base_load = BaseLoadDesk(market)
        self.billing = BillingDesk(market)
        self.ladder = LadderDesk(market)
        self.account = OwnAccountDesk(market, self.spend_guard)


class Operator:
    """What the operator's token reaches."""

    def __init__(self, market: Market) -> None:
        self.accounts = AccountsDesk(market)
        self.clusters = ClustersDesk(market)
        self.islands = IslandsDesk(market)
        self.nodes = NodeActions(market)
        self.base_load = BaseLoadDesk(market)
