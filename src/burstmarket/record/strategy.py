"""What a backtest's strategy is given and what it answers (docs/analysts.md "Backtests").

A strategy is a Python file defining `decide(tick, own)`: called after every tick of its island
in the period with the tick's public data (`Tick`: the statistics and the ladder, as the feed
publishes them) and its own state (`Own`: what it holds, what waits and why, its receipt, what
it declared), it answers its declaration, `VmBid` or `K8sBid` as its kind is, or None to leave
its demand as it is. Prices are USD per GPU-hour, Decimal as requests carry them.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from burstmarket.contract import LadderView, PendingJobView, ReceiptView, TickStats
from burstmarket.states import Kind

FUNCTION = "decide"
"""The name a strategy file defines its function under."""


@dataclass(frozen=True, slots=True)
class VmBid:
    """A VM cluster's declaration: `nodes` whole nodes at most, at `price` at most (None: no
    ceiling); `release` names held nodes to give back first when it asks for fewer."""

    nodes: int
    price: Decimal | None
    release: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JobBid:
    """A Kubernetes job: `nodes` whole nodes as one gang, or `pods` pods of `gpus_per_pod`
    GPUs (packed on a base load block); `price` its own limit (None: the cluster's)."""

    name: str
    nodes: int | None = None
    pods: int | None = None
    gpus_per_pod: int | None = None
    price: Decimal | None = None
    priority_class: str | None = None


@dataclass(frozen=True, slots=True)
class K8sBid:
    """A Kubernetes cluster's declaration: its limit price and every job it wants live, in the
    order to submit the new ones. A job it held before and leaves out is finished."""

    limit_price: Decimal | None
    jobs: tuple[JobBid, ...] = ()


Bid = VmBid | K8sBid


@dataclass(frozen=True, slots=True)
class Tick:
    """A tick's public data: what every feed subscriber saw of it."""

    island: str
    tick: int
    time: datetime
    """Market time of the tick (UTC)."""
    stats: TickStats
    ladder: LadderView


@dataclass(frozen=True, slots=True)
class Own:
    """The strategy's cluster after the tick, as its own feed channel shows it."""

    cluster: str
    kind: Kind
    gpus_per_node: int
    held_nodes: int
    """Market nodes held (won or protected)."""
    held_gpus: int
    node_ids: tuple[str, ...]
    base_load_nodes: int
    pending_gpus: int
    pending_reason: str | None
    pending_jobs: tuple[PendingJobView, ...]
    rate: float | None
    """USD per GPU-hour it pays this tick (None: no market nodes)."""
    receipt: ReceiptView | None
    bid: Bid | None
    """Its declaration standing now (None: none yet)."""
    refused: tuple[str, ...]
    """The refusal codes of what its last declaration asked (empty: all taken)."""


Strategy = Callable[[Tick, Own], Bid | None]


class StrategyError(Exception):
    """A strategy file that cannot be used, or a strategy that failed: one line saying why."""


def load(path: Path) -> Strategy:
    """The `decide` function of the strategy file at `path`."""
    if not path.is_file():
        raise StrategyError(f"no strategy file {path}")
    spec = importlib.util.spec_from_file_location(f"burstmarket_strategy_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise StrategyError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses of the file resolve their module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise StrategyError(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc
    decide = getattr(module, FUNCTION, None)
    if not callable(decide):
        raise StrategyError(f"{path} defines no function {FUNCTION}(tick, own)")
    return decide  # type: ignore[no-any-return]
