"""SQL lives in files under burstmarket/sql/, one statement per file, loaded and cached by name."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def sql(name: str) -> str:
    """The text of `sql/<name>.sql`; a missing name is a bug, so it raises."""
    return resources.files("burstmarket").joinpath("sql", f"{name}.sql").read_text("utf-8")
