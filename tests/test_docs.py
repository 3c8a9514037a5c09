"""The README and the docs pages as code: every fenced block says what it is, every block a
reader would run is run by a test, every command line in them parses, and the engine's example
prints what the page shows."""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
from collections import Counter
from pathlib import Path

import click
import pytest
import typer.main
import yaml

from burstmarket.cli import app
from tests import docs
from tests.conftest import BURSTMARKET

# Blocks that show rather than run: diagrams, layouts, log lines, a feed message.
SHOWN = {"text"}
# The blocks other tests run, each as written: (page, language) -> how many, and those tests.
RUN_ELSEWHERE = {
    ("README.md", "python"): (
        2,
        [
            "tests/client/test_client.py::test_the_readme_example_reads_the_price_and_the_ladder",
            "tests/record/test_backtest.py::"
            "test_the_docs_strategy_wins_nodes_as_a_newcomer_and_others_lose_them",
        ],
    ),
    ("README.md", "sql"): (
        1,
        [
            "tests/record/test_money_record.py::"
            "test_billing_per_account_per_day_from_the_readme_is_the_stores_ledger"
        ],
    ),
    ("docs/client.md", "python"): (
        1,
        ["tests/client/test_client.py::test_the_client_page_example_bids_the_ladder_and_says_when"],
    ),
    ("docs/service.md", "python"): (
        1,
        [
            "tests/client/test_client.py::"
            "test_the_base_load_example_buys_a_block_and_packs_a_small_job_on_it"
        ],
    ),
    ("docs/analysts.md", "sql"): (
        3,
        [
            "tests/history/test_analyst_queries.py::test_the_duckdb_queries_run_as_written",
            "tests/simulation/test_simulate.py::"
            "test_every_analyst_query_runs_on_simulated_history_with_the_right_gpu_hours",
        ],
    ),
    ("docs/analysts.md", "python"): (
        2,
        [
            "tests/history/test_analyst_queries.py::test_the_polars_queries_run_as_written",
            "tests/record/test_backtest.py::"
            "test_the_docs_strategy_wins_nodes_as_a_newcomer_and_others_lose_them",
        ],
    ),
}
# Run here: shell lines are parsed (and the engine's pipeline run), `console` blocks run and
# their output compared, `yaml` parsed.
RUN_HERE = {"sh", "console", "yaml"}
# Commands of other programs a page tells the reader to run (tests/conftest.py starts Redis).
OTHER_PROGRAMS = {"redis-server"}


def test_every_block_is_either_shown_or_run() -> None:
    blocks = docs.all_blocks()
    assert blocks, "no code blocks found"
    unlabelled = [(b.page, b.section) for b in blocks if not b.language]
    assert unlabelled == [], "a fence without a language: say sh, console, text, python, sql"
    unknown = {b.language for b in blocks} - SHOWN - RUN_HERE - {lang for _, lang in RUN_ELSEWHERE}
    assert unknown == set()
    counted = Counter((b.page, b.language) for b in blocks if b.language in {"python", "sql"})
    assert dict(counted) == {key: count for key, (count, _) in RUN_ELSEWHERE.items()}


@pytest.mark.parametrize(
    "test_id", sorted({t for _, tests in RUN_ELSEWHERE.values() for t in tests})
)
def test_the_tests_that_run_blocks_exist(test_id: str) -> None:
    path, name = test_id.split("::")
    tree = ast.parse((docs.REPO / path).read_text())
    defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert name in defined, f"{test_id} runs a docs block and does not exist"


def statements(text: str) -> list[str]:
    """Shell statements: continuation lines joined, split at newlines outside quotes."""
    found, current, quote = [], "", ""
    for char in text.replace("\\\n", " "):
        if char == "\n" and not quote:
            found.append(current)
            current = ""
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        current += char
    return [s.strip() for s in [*found, current] if s.strip()]


def commands(block: docs.Block) -> list[list[str]]:
    """The block's command lines as argv lists, comments dropped; in a `console` block only
    the lines after a `$ ` prompt (the rest is output)."""
    lines = statements(block.code)
    if block.language == "console":
        lines = [s.removeprefix("$ ") for s in lines if s.startswith("$ ")]
    return [argv for argv in (shlex.split(s, comments=True) for s in lines) if argv]


def shell_blocks() -> list[docs.Block]:
    return [b for b in docs.all_blocks() if b.language in {"sh", "console"}]


def burstmarket_argv(argv: list[str]) -> list[str] | None:
    """The arguments of a `burstmarket` command, wherever it stands in a pipeline."""
    for i, word in enumerate(argv):
        if word in {"burstmarket", ".venv/bin/burstmarket"}:
            end = argv.index("|", i) if "|" in argv[i:] else len(argv)
            return argv[i + 1 : end]
    return None


def test_every_burstmarket_command_on_the_pages_parses() -> None:
    group = typer.main.get_command(app)
    checked = 0
    for block in shell_blocks():
        for argv in commands(block):
            args = burstmarket_argv(argv)
            if args is None:
                continue
            where = f"{block.page} {block.section}: burstmarket {' '.join(args)}"
            with click.Context(group, info_name="burstmarket") as parent:
                command = group.get_command(parent, args[0])
                assert command is not None, f"{where}: no such command"
                try:
                    command.make_context(args[0], args[1:], parent=parent)
                except click.UsageError as refused:
                    pytest.fail(f"{where}: {refused.format_message()}")
            checked += 1
    assert checked >= 5  # serve, feed, simulate, clear at least


def test_every_make_target_on_the_pages_exists() -> None:
    makefile = (docs.REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = [
        (block.page, argv[1])
        for block in shell_blocks()
        for argv in commands(block)
        if argv[0] == "make" and len(argv) > 1
    ]
    assert {"run", "test"} <= {target for _, target in named}
    assert [(page, t) for page, t in named if t.split("=")[0] not in targets and "=" not in t] == []


def test_every_other_program_named_is_one_the_project_installs() -> None:
    programs = {
        argv[0]
        for block in shell_blocks()
        for argv in commands(block)
        if argv[0] not in {"make", "echo", "burstmarket", ".venv/bin/burstmarket", "curl"}
    }
    assert programs <= OTHER_PROGRAMS, programs - OTHER_PROGRAMS


def pipeline(code: str) -> str:
    """A shell block's text with the installed command line where it says `burstmarket`."""
    return re.sub(r"(\.venv/bin/)?\bburstmarket clear\b", f"{BURSTMARKET} clear", code)


def clear_examples() -> list[docs.Block]:
    return [b for b in shell_blocks() if re.search(r"\| (\.venv/bin/)?burstmarket clear", b.code)]


def test_the_engine_example_prints_what_its_page_shows_and_the_readme_runs_the_same() -> None:
    (shown,) = [b for b in clear_examples() if b.language == "console"]
    command, _, output = shown.code.removeprefix("$ ").partition("| burstmarket clear\n")
    ran = subprocess.run(
        ["bash", "-c", pipeline(command + "| burstmarket clear")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(ran.stdout) == json.loads(output)
    readme = [b for b in clear_examples() if b.page == "README.md"]
    assert len(readme) == 1
    again = subprocess.run(
        ["bash", "-c", pipeline(readme[0].code)], capture_output=True, text=True, check=True
    )
    assert json.loads(again.stdout) == json.loads(output)


def test_the_yaml_blocks_parse() -> None:
    blocks = [b for b in docs.all_blocks() if b.language == "yaml"]
    assert blocks
    for block in blocks:
        assert isinstance(yaml.safe_load(block.code), dict), (block.page, block.section)


def test_every_relative_link_on_the_pages_leads_to_a_file() -> None:
    broken = []
    for page in docs.PAGES:
        text = (docs.REPO / page).read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            if not ((docs.REPO / page).parent / target).exists():
                broken.append((page, target))
    assert broken == []


def test_the_readme_stays_a_front_door() -> None:
    readme = (docs.REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", readme))
    pages = {Path(p).name for p in docs.PAGES if p.startswith("docs/")}
    assert pages - linked == set(), "a docs page the README does not lead to"
