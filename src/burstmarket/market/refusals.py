"""The one format of a refusal's log line, shared by the API handler and the tick."""

from __future__ import annotations

import logging

from burstmarket.errors import MarketError

log = logging.getLogger("burstmarket.refused")


def refusal_line(exc: MarketError, cluster: str | None = None) -> str:
    """`REFUSED reason=<code> cluster=<id|-> <figures> detail=...`: greppable, one per refusal."""
    figures = dict(exc.figures)
    who = figures.pop("cluster", None) or cluster or "-"
    parts = [f"REFUSED reason={exc.code}", f"cluster={who}"]
    parts += [f"{key}={value}" for key, value in figures.items()]
    parts.append(f"detail={exc.detail!r}")
    return " ".join(parts)


def log_refusal(exc: MarketError, cluster: str | None = None) -> None:
    log.warning(refusal_line(exc, cluster))
