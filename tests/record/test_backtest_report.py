"""What `burstmarket backtest` prints: every figure to six places (the ledger's µUSD), even where
the period's hours are a recurring decimal (10-second ticks), never Decimal's 28 digits."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import polars as pl

from burstmarket.record.backtest import Figures, Result, report

TEN_SECONDS = Decimal(10) / 3600  # of an hour: 0.002777…, rounded at Decimal's 28 digits


def test_the_printed_figures_have_six_places(tmp_path: Path) -> None:
    times = [datetime(2026, 12, 3, 0, 0, s, tzinfo=UTC) for s in (0, 10)]
    mine = Figures(
        held_gpu_hours=1792 * TEN_SECONDS,
        pending_hours=0 * TEN_SECONDS,
        spend_usd=Decimal("8.186684"),
        mean_rate=Decimal("1.644646"),
    )
    was = Figures(2 * TEN_SECONDS, None, Decimal("1234.5"), None)
    result = Result("vm-a", "edge", pl.DataFrame({"time": times}), mine, was, 0, None)

    printed = report(result, tmp_path).splitlines()

    figures = {line[:24].strip(): line[24:].split() for line in printed[2:6]}
    assert figures == {
        "held GPU-hours": ["4.977778", "0.005556"],
        "pending hours": ["0.000000", "not", "in", "the", "record"],
        "spend USD": ["8.186684", "1,234.500000"],
        "mean rate USD/GPU-hour": ["1.644646", "not", "in", "the", "record"],
    }
    assert not re.search(r"\d\.\d{7}", "\n".join(printed)), printed
