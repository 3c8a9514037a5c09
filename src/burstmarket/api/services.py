"""What the route handlers are given (by dependency injection): the market and its faces."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from burstmarket.api.ratelimit import RateLimits
from burstmarket.clock import Clock
from burstmarket.market.operator import Operator
from burstmarket.market.service import Market
from burstmarket.market.tenant import Tenant
from burstmarket.settings import Settings


@dataclass(slots=True)
class Services:
    settings: Settings
    clock: Clock
    market: Market
    tenant: Tenant
    operator: Operator
    limits: RateLimits
    """Each cluster token's request rate (api/ratelimit.py)."""
    tick_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serializes manual ticks: each request's ticks run back to back."""
