"""Imports point one way: the engine and the money/domain modules know nothing of I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import burstmarket

PACKAGE = Path(burstmarket.__file__).parent
FORBIDDEN = {"duckdb", "pyarrow", "polars", "litestar", "apscheduler", "uvicorn", "websockets"}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_engine_and_money_import_no_io_libraries() -> None:
    files = [*(PACKAGE / "auction").glob("*.py"), PACKAGE / "money.py", PACKAGE / "errors.py"]
    assert len(files) > 5
    for path in files:
        assert not imported_roots(path) & FORBIDDEN, path


def test_engine_imports_nothing_from_the_service() -> None:
    for path in (PACKAGE / "auction").glob("*.py"):
        source = path.read_text()
        for layer in ("market", "store", "api", "feed"):
            assert f"burstmarket.{layer}" not in source, (path, layer)


def test_imports_point_from_the_api_to_the_market_never_back() -> None:
    """The market returns the contract's answer types; it never imports the API layer."""
    files = list((PACKAGE / "market").rglob("*.py"))
    assert len(files) > 5
    for path in files:
        assert "burstmarket.api" not in path.read_text(), path
    contract = PACKAGE / "contract.py"
    assert imported_roots(contract) <= {"__future__", "datetime", "decimal", "typing", "msgspec"}
