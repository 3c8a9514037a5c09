"""The one format of a refusal's log line, shared by the API handler, the feed and the tick."""

from __future__ import annotations

import logging

from burstmarket import metrics
from burstmarket.errors import MarketError
from burstmarket.logsafe import value

log = logging.getLogger("burstmarket.refused")

MAX_DETAIL = 500
"""Characters of the detail in a REFUSED line (the body carries it whole)."""


def refusal_line(exc: MarketError, cluster: str | None = None) -> str:
    """`REFUSED reason=<code> cluster=<id|-> <figures> detail=...`: greppable, one per refusal,
    every value escaped and cut (logsafe.py), so a client's input never starts a line."""
    figures = dict(exc.figures)
    who = figures.pop("cluster", None) or cluster or "-"
    parts = [f"REFUSED reason={exc.code}", f"cluster={value(who)}"]
    parts += [f"{key}={value(item)}" for key, item in figures.items()]
    parts.append(f"detail={value(exc.detail, MAX_DETAIL)}")
    return " ".join(parts)


def log_refusal(exc: MarketError, cluster: str | None = None) -> None:
    log.warning(refusal_line(exc, cluster))
    metrics.REFUSALS.labels(exc.code).inc()
