"""What every route handler is given, as the dependency `deps`: the market and its faces."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from litestar.di import NamedDependency

from burstmarket.clock import Clock
from burstmarket.market.operator import Operator
from burstmarket.market.service import Market
from burstmarket.market.tenant import Tenant


@dataclass(slots=True)
class Dependencies:
    clock: Clock
    market: Market
    tenant: Tenant
    operator: Operator
    tick_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serializes manual ticks: each request's ticks run back to back."""


Deps = NamedDependency[Dependencies]
"""A handler's parameter `deps: Deps`."""
Me = NamedDependency[str]
"""A tenant handler's parameter `me: Me`: its cluster's id (api/auth.py)."""
