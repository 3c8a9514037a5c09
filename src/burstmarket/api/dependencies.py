"""What the route handlers are given: `deps`, the market and its faces; a tenant handler
instead gets `me`, the cluster it acts for with the market's tenant face (one dependency per
handler: litestar resolves two at once in a task group of their own, on every request)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from litestar.di import NamedDependency

from burstmarket.clock import Clock
from burstmarket.market.desks import Operator, Tenant
from burstmarket.market.market import Market


@dataclass(slots=True)
class Dependencies:
    clock: Clock
    market: Market
    tenant: Tenant
    operator: Operator
    tick_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serializes manual ticks: each request's ticks run back to back."""


@dataclass(frozen=True, slots=True)
class Caller:
    cluster: str
    """The cluster whose token the tenant router's guard accepted (api/auth.py)."""
    tenant: Tenant


Deps = NamedDependency[Dependencies]
"""A handler's parameter `deps: Deps`."""
Me = NamedDependency[Caller]
"""A tenant handler's parameter `me: Me`."""
