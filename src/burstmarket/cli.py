"""The `burstmarket` command line."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import msgspec
import typer

app = typer.Typer(
    help="burstmarket: the market engine and market-data service for preemptible GPU capacity.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _commands() -> None:
    """Keeps `burstmarket <command>` a group of commands."""


@app.command()
def clear() -> None:
    """Clear one island's instance: JSON on stdin, its clearing as JSON on stdout.

    No state and no server: what-if analysis, and how the auction is checked from outside.
    Bad input exits with code 2 and one line on stderr naming the field.
    """
    from burstmarket.auction import clear as clear_island
    from burstmarket.clearing_json import InputError, parse_island, render_clearing

    try:
        island = parse_island(sys.stdin.buffer.read())
    except InputError as exc:
        typer.echo(f"invalid input: {exc}", err=True)
        raise typer.Exit(code=2) from None
    sys.stdout.buffer.write(msgspec.json.encode(render_clearing(clear_island(island))) + b"\n")


class ClockChoice(StrEnum):
    real = "real"
    manual = "manual"


@app.command()
def serve(
    clock: Annotated[
        ClockChoice,
        typer.Option(help="real: ticks every --tick-seconds; manual: only POST /api/admin/ticks."),
    ] = ClockChoice.real,
    data_dir: Annotated[
        Path, typer.Option(help="DuckDB file and Parquet history live here.")
    ] = Path("data"),
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    tick_seconds: Annotated[
        float, typer.Option(min=0.001, help="Market time between two ticks of an island.")
    ] = 10.0,
) -> None:
    """Run the market service (operator token from BURSTMARKET_OPERATOR_TOKEN)."""
    from burstmarket.server import serve as run_server
    from burstmarket.settings import Settings

    run_server(
        Settings.from_env(
            clock=clock.value, data_dir=data_dir, host=host, port=port, tick_seconds=tick_seconds
        )
    )


def main() -> None:
    app()
