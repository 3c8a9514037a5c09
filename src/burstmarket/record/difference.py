"""What a check of the record found: one recorded figure that a re-run from the history does
not reproduce."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Difference:
    island: str
    tick: int
    table: str
    """The history table holding the recorded figure (`cluster_rates`, `ledger`, ...)."""
    what: str
    """What differs, with both figures: `cluster c-1 rate: recorded 3.500100, re-run 3.500000`."""

    def __str__(self) -> str:
        return f"island {self.island} tick {self.tick} {self.table}: {self.what}"
