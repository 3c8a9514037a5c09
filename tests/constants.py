"""Figures the tests share, defined once."""

from __future__ import annotations

from burstmarket.clock import NS_PER_S

USD = 1_000_000
"""One US dollar in micro-dollars, the unit of every price and amount in the market."""

T0 = 1_800_000_000 * NS_PER_S
"""The market time an in-process market starts at (2027-01-15 08:00 UTC), in nanoseconds."""

OPERATIONS = 40
"""The HTTP operations the OpenAPI document lists (a new endpoint raises it, in one place)."""
