"""The `burstmarket` command line."""

from __future__ import annotations

import sys

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


def main() -> None:
    app()
