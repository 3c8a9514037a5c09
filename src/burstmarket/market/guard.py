"""The spend guard's arithmetic: worst cases, outstanding commitments, what is left of a limit.

A commitment is the worst case of a grant (locked price × GPUs × the longer of its window and
its minimum hold), and then of each further hour kept. What is still outstanding of it at time
t is the worst case of the rest of its span, so spent + outstanding never undercounts the bill.
A raised ceiling lifts the cap of nodes already held, so it commits the difference for the rest
of their spans (docs/market.md "Spend guard").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from burstmarket.market.ledger import amount
from burstmarket.market.model import SPEND_WINDOW_NS, Node
from burstmarket.money import LEDGER_UNITS_PER_MICRO


def worst_case(price: int, gpus: int, span_ns: int) -> int:
    return amount(price, gpus, span_ns)


def outstanding(nodes: Iterable[Node], gpus_per_node: int, now: int) -> int:
    """Ledger units still committed by held nodes at `now`."""
    total = 0
    for n in nodes:
        if n.commit_price is not None and n.commit_ends_at is not None and n.commit_ends_at > now:
            total += amount(n.commit_price, gpus_per_node, n.commit_ends_at - now)
    return total


def outgrown(nodes: Iterable[Node], price: int, gpus_per_node: int, now: int) -> list[int]:
    """For each held node, the worst case a cap raised to `price` adds to the rest of its
    commitment (0 where it is committed at `price` or more already)."""
    extra = []
    for n in nodes:
        ends, committed = n.commit_ends_at or 0, n.commit_price
        grows = committed is not None and committed < price and ends > now
        extra.append(amount(price - (committed or 0), gpus_per_node, ends - now) if grows else 0)
    return extra


def window_open(start: int | None, now: int) -> bool:
    return start is not None and now < start + SPEND_WINDOW_NS


@dataclass(frozen=True, slots=True)
class Budget:
    """One cluster's rolling-24 h spend limit at an instant, in ledger units."""

    limit: int | None
    spent: int
    committed: int

    @classmethod
    def of(cls, limit_micros: int | None, spent: int, committed: int) -> Budget:
        limit = None if limit_micros is None else limit_micros * LEDGER_UNITS_PER_MICRO
        return cls(limit, spent, committed)

    @property
    def left(self) -> int | None:
        """What may still be committed: never below 0, even with a limit lowered under what
        is spent and committed already (that part is `over_by`)."""
        return None if self.limit is None else max(0, self.limit - self.spent - self.committed)

    @property
    def over_by(self) -> int | None:
        """How far spent and committed stand over a limit lowered under them (0 when not)."""
        return None if self.limit is None else max(0, self.spent + self.committed - self.limit)

    def fits(self, units: int) -> bool:
        left = self.left
        return left is None or units <= left
