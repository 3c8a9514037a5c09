"""The data dictionary in docs/ is the rendering of the table definitions, not a copy by hand
(the real files are checked against the definitions in tests/simulation/test_simulate.py)."""

from __future__ import annotations

from pathlib import Path

from burstmarket.history.dictionary import HISTORY, markdown
from burstmarket.history.layout import TABLES

DOC = Path(__file__).parents[2] / "docs" / "history-tables.md"


def test_docs_history_tables_is_generated_from_the_definitions() -> None:
    # regenerate with: python -m burstmarket.history.dictionary > docs/history-tables.md
    assert DOC.read_text() == markdown()


def test_every_exported_table_is_defined_with_its_interval() -> None:
    assert sorted(t.name for t in HISTORY) == sorted(TABLES)
    for table in HISTORY:
        names = [c.name for c in table.columns]
        # what compaction's ORDER BY ALL sorts by: the ledger's rows a request wrote have no tick
        leading = ["time", "tick"] if table.name == "ledger" else ["tick", "time"]
        assert names[:2] == leading, table.name
        assert names[-1] == "tick_seconds", table.name
