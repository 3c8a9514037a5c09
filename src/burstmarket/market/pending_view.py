"""Why demand waits, as a tenant reads it (docs/market.md "Why it waits"): the cause and the
figures the last tick kept with the cluster or the job, formatted, never recomputed."""

from __future__ import annotations

from burstmarket.clock import maybe_datetime
from burstmarket.contract import PendingDetailView
from burstmarket.market.model import OUTBID, WINDOWS, PendingDetail
from burstmarket.money import maybe_usd
from burstmarket.states import PendingReason


def pending_detail_view(
    reason: PendingReason | None, d: PendingDetail | None
) -> PendingDetailView | None:
    """The figures of `reason`: its `price` is the price then under windows, the price to win
    under outbid."""
    if reason is None or d is None:
        return None
    return PendingDetailView(
        since=maybe_datetime(d.since),
        balance_usd=maybe_usd(d.balance),
        left_usd=maybe_usd(d.spend_left),
        worst_case_usd=maybe_usd(d.worst_case),
        ceiling=maybe_usd(d.ceiling),
        reserve_price=maybe_usd(d.reserve),
        nodes=d.nodes,
        market_nodes=d.market_nodes,
        contestable_at=maybe_datetime(d.contestable_at),
        price_then=maybe_usd(d.price) if reason == WINDOWS else None,
        price_to_win=maybe_usd(d.price) if reason == OUTBID else None,
        gpus=d.gpus,
    )
