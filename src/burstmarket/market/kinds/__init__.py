"""The kinds of demand a cluster can be (`Cluster.kind`), each one module: vm.py (declared
nodes at a ceiling), k8s.py (jobs). `KINDS` maps a cluster's kind to its rules; the tick's
phases and the market's desks ask it (`KINDS[c.kind]`) instead of branching on the name.
docs/architecture.md "How to add a third kind" says what a new one takes.

Pure: the kinds import nothing of the store, the API or the tick (tests/test_imports.py).
"""

from __future__ import annotations

from burstmarket.market.kinds.base import Aged, Demand, DemandKind, TickView, unit
from burstmarket.market.kinds.k8s import KUBERNETES
from burstmarket.market.kinds.vm import VM

__all__ = ["KINDS", "Aged", "Demand", "DemandKind", "TickView", "unit"]

KINDS: dict[str, DemandKind] = {"vm": VM, "k8s": KUBERNETES}
"""Cluster.kind -> the rules of that kind of demand."""
