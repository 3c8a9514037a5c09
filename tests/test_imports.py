"""Imports point one way: the engine and the money/domain modules know nothing of I/O."""

from __future__ import annotations

import ast
import subprocess
import sys
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
    outside = {"__future__", "datetime", "decimal", "typing", "msgspec"}
    assert imported_roots(contract) <= outside | {"burstmarket"}
    # of the package, the contract takes only the states, which take nothing
    assert imported_modules("burstmarket.contract", contract, modules()) == {"burstmarket.states"}
    assert imported_roots(PACKAGE / "states.py") <= {"__future__", "typing"}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports, wherever the import stands (inside a function or
    under TYPE_CHECKING too), and the __init__ of every other package they are in (importing a
    module runs its package's __init__ first)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{name}: relative import"
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                targets.add(submodule if submodule in known else node.module)
    found: set[str] = set()
    for target in targets:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            # its own packages are already being imported when it runs: no edge back to them
            if prefix in known and not name.startswith(prefix + ".") and prefix != name:
                found.add(prefix)
    return found


def test_the_package_has_no_import_cycle() -> None:
    known = modules()
    graph = {name: imported_modules(name, path, known) for name, path in known.items()}
    assert len(graph) > 50
    assert graph["burstmarket.market.market"]
    state: dict[str, str] = {}  # module -> "open" while on the path, "done" once cleared

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycle = [*path[path.index(imported) :], imported]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if imported not in state:
                visit(imported, [*path, imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_kinds_of_demand_are_pure_and_sit_under_the_tick() -> None:
    """market/kinds/, which the tick asks, reaches (through everything it imports) no I/O
    library and nothing of the store, the API or the feed; and it imports nothing of the tick,
    which imports it (kinds see the tick through their own `TickView`)."""
    known = modules()
    graph = {name: imported_modules(name, path, known) for name, path in known.items()}
    kinds = sorted(name for name in known if name.startswith("burstmarket.market.kinds"))
    assert len(kinds) >= 4
    reached, todo = set(kinds), list(kinds)
    while todo:
        for imported in graph[todo.pop()] - reached:
            reached.add(imported)
            todo.append(imported)
    for module in sorted(reached):
        for layer in ("store", "api", "feed", "history", "market.tick", "market.market"):
            assert not module.startswith(f"burstmarket.{layer}"), (kinds, module)
        assert not imported_roots(known[module]) & FORBIDDEN, module
    assert "burstmarket.market.kinds" in graph["burstmarket.market.tick.tick_state"]


def test_only_the_store_reaches_duckdb() -> None:
    """DuckDB is imported by store/ alone, and nothing else runs a statement on a cursor or
    opens one by hand: a reader takes `Database.read()`, the one read path."""
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "store":
            continue
        roots = imported_roots(path)
        assert "duckdb" not in roots, path
        if "redis" in roots:
            continue  # the bus (feed/bus.py): its `execute` sends a pipeline of Redis commands
        for node in ast.walk(ast.parse(path.read_text())):
            call = node.func if isinstance(node, ast.Call) else None
            if isinstance(call, ast.Attribute) and call.attr in {"execute", "register", "sql"}:
                raise AssertionError(f"{path}:{node.lineno} runs a statement itself")
            if isinstance(call, ast.Attribute) and call.attr == "cursor":
                raise AssertionError(f"{path}:{node.lineno} opens a cursor by hand")


def test_a_feed_edge_loads_neither_the_store_nor_the_engine() -> None:
    """`burstmarket feed` has no store of its own: its process never loads DuckDB (nor the
    engine's numerical libraries), which keeps an edge small."""
    code = (
        "import sys, burstmarket.api.edge_app, burstmarket.server, burstmarket.cli; "
        "print(sorted(m for m in ('duckdb', 'polars', 'pyarrow', 'numpy', 'burstmarket.store')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
