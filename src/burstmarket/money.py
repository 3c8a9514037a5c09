"""Exact money: integer micro-dollars (µUSD) everywhere inside; floats only at the display edge.

Prices and rates are µUSD per GPU-hour. A price lives on the 0.0001 USD grid (100 µUSD) and is at
most 1,000 USD per GPU-hour; anything else is refused, never rounded.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

MICROS_PER_USD = 1_000_000
PRICE_STEP = 100  # 0.0001 USD in µUSD: the price grid
MAX_PRICE = 1_000 * MICROS_PER_USD
MAX_PRICE_USD = Decimal(MAX_PRICE).scaleb(-6)
MAX_AMOUNT_USD = Decimal(10) ** 12
"""The largest amount (a limit, a balance, a credit) either side of 0."""
MICRO_USD = Decimal("0.000001")
"""One µUSD as a Decimal: the places a dollar amount is exact to (`Decimal.quantize`)."""


class MoneyError(ValueError):
    """A money value that cannot be taken as given (never rounded to fit)."""


def to_decimal(value: object) -> Decimal:
    """Exact decimal of a JSON number; a float is read by its shortest repr (6.1 -> 6.1)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise MoneyError("must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise MoneyError("must be finite")
    try:
        result = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation as exc:
        raise MoneyError("must be a number") from exc
    if not result.is_finite():
        raise MoneyError("must be finite")
    return result


def parse_price(value: object, *, allow_zero: bool = False) -> int:
    """A price in USD per GPU-hour -> µUSD, refusing what is off the 0.0001 grid or out of range."""
    price = to_decimal(value)
    if price < 0 or (price == 0 and not allow_zero):
        raise MoneyError("must be greater than 0" if not allow_zero else "must not be negative")
    if price > MAX_PRICE_USD:  # compared, not multiplied: 1e999999999 is a valid Decimal
        raise MoneyError("must be at most 1000 USD per GPU-hour")
    if price != price.quantize(Decimal("0.0001")):
        raise MoneyError("has more than 4 decimal places")
    return int(price * MICROS_PER_USD)


def parse_amount(value: object) -> int:
    """A dollar amount (limits, balances) -> µUSD, refusing more than 6 decimals."""
    amount = to_decimal(value)
    if amount.copy_abs() > MAX_AMOUNT_USD:  # copy_abs: exact, never an overflow
        raise MoneyError("is out of range")
    if amount != amount.quantize(MICRO_USD):
        raise MoneyError("has more than 6 decimal places")
    return int(amount * MICROS_PER_USD)


def usd(micros: int) -> float:
    """µUSD -> USD for JSON output (6 decimals are exact in a double at these magnitudes)."""
    return micros / MICROS_PER_USD


def maybe_usd(micros: int | None) -> float | None:
    """`usd`, None kept (no price set, no rate yet)."""
    return None if micros is None else usd(micros)


def round_div(numerator: int, denominator: int) -> int:
    """Integer division rounded half up (for display of exact ratios such as a rate)."""
    return (2 * numerator + denominator) // (2 * denominator)


LEDGER_UNITS_PER_MICRO = 3_600_000
"""Ledger amounts are µUSD-per-hour × milliseconds: a rate times GPUs times a duration in ms is
an exact integer, so a tick's charge needs no rounding. 3.6e6 units make one µUSD."""
LEDGER_UNITS_PER_USD = MICROS_PER_USD * LEDGER_UNITS_PER_MICRO


def units_to_micros(units: int) -> int:
    """Ledger units -> µUSD rounded half away from zero, for display only."""
    if units >= 0:
        return round_div(units, LEDGER_UNITS_PER_MICRO)
    return -round_div(-units, LEDGER_UNITS_PER_MICRO)


def units_to_usd(units: int) -> Decimal:
    """Ledger units -> USD rounded half away from zero to 6 decimals, for display only."""
    return Decimal(units_to_micros(units)).scaleb(-6)


def micros_to_decimal(micros: int) -> Decimal:
    """µUSD -> exact USD Decimal (for DECIMAL(18,6) columns)."""
    return Decimal(micros).scaleb(-6)


def apportion(values: list[int], per: int) -> list[int]:
    """Each value / `per` as a whole number, so that they add up to the rounded total."""
    shares = [v // per for v in values]
    short = _rounded(sum(values), per) - sum(shares)  # between 0 and len(values)
    by_remainder = sorted(range(len(values)), key=lambda i: (shares[i] * per - values[i], i))
    for i in by_remainder[:short]:
        shares[i] += 1
    return shares


def _rounded(value: int, per: int) -> int:
    """value / per rounded half away from zero (as money.units_to_usd shows a lone amount)."""
    return round_div(value, per) if value >= 0 else -round_div(-value, per)
