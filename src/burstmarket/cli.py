"""The `burstmarket` command line."""

from __future__ import annotations

import sys
import time
import typing
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import msgspec
import typer

from burstmarket import __version__

if TYPE_CHECKING:
    import logging

    from litestar import Litestar

    from burstmarket.settings import Settings
    from burstmarket.simulation.live import OperatorShown

app = typer.Typer(
    help="burstmarket: the market engine and market-data service for preemptible GPU capacity.",
    no_args_is_help=True,
    add_completion=False,
    # a docstring's paragraphs rewrapped to the terminal (Typer's "rich" mode keeps the source's
    # line breaks, so each wrapped line left a word alone), `code` shown as code
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def refuse(message: str) -> NoReturn:
    """What a command cannot do: one line on stderr naming the command (`main`), and exit 1."""
    raise typer.TyperException(message)


def _show_version(shown: bool) -> None:
    if shown:
        typer.echo(f"burstmarket {__version__}")
        raise typer.Exit()


@app.callback()
def _commands(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
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
        typer.echo(f"burstmarket clear: invalid input: {exc}", err=True)
        raise typer.Exit(code=2) from None
    sys.stdout.buffer.write(msgspec.json.encode(render_clearing(clear_island(island))) + b"\n")


class ClockChoice(StrEnum):
    real = "real"
    manual = "manual"


class LogChoice(StrEnum):
    text = "text"
    json = "json"


HostOption = Annotated[str, typer.Option(help="Address to listen on.")]
PortOption = Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")]
BacklogOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Messages held for one websocket subscriber before it is closed 4008 slow-consumer.",
    ),
]
PingOption = Annotated[
    float,
    typer.Option(
        min=0.001,
        help="Websocket keepalive ping interval; a client that leaves a "
        "ping unanswered this long is closed 4008 slow-consumer.",
    ),
]
HeaderTimeoutOption = Annotated[
    float,
    typer.Option(
        min=0.001,
        help="Seconds a client has to send a request's headers: past it the request is "
        "refused 408 request-timeout (an idle connection is closed).",
    ),
]
PerAddressOption = Annotated[
    int,
    typer.Option(
        min=0,
        help="Connections one client address may hold open, HTTP and websocket alike; the "
        "next is refused 429 too-many-connections (0: no limit).",
    ),
]
LogOption = Annotated[
    LogChoice,
    typer.Option(help="text: TIME LEVEL LOGGER: MESSAGE lines; json: one object a line."),
]
CorsOption = Annotated[
    str,
    typer.Option(
        help="Web origins whose pages may read the public market data, comma-separated "
        "('*': any; '': none)."
    ),
]


@app.command()
def serve(
    clock: Annotated[
        ClockChoice,
        typer.Option(help="real: ticks every --tick-seconds; manual: only POST /api/admin/ticks."),
    ] = ClockChoice.real,
    data_dir: Annotated[
        Path, typer.Option(help="DuckDB file and Parquet history live here.")
    ] = Path("data"),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    tick_seconds: Annotated[
        float, typer.Option(min=0.001, help="Market time between two ticks of an island.")
    ] = 10.0,
    simulate: Annotated[
        bool,
        typer.Option(
            help="Start simulated tenants (VM and Kubernetes clusters on two islands) that "
            "trade through the HTTP API, so every feed and the dashboard move."
        ),
    ] = False,
    speed: Annotated[
        float | None,
        typer.Option(
            min=1.0,
            help="Run market time this many times faster than the wall clock, for a demo: "
            "the service runs on the manual clock and the simulation ticks it.",
        ),
    ] = None,
    rate_limit: Annotated[
        float,
        typer.Option(min=0.0, help="Requests per second each cluster token may sustain (0: off)."),
    ] = 50.0,
    rate_burst: Annotated[
        int, typer.Option(min=1, help="Requests a cluster token may make at once.")
    ] = 200,
    feed_backlog: BacklogOption = 256,
    feed_ping_seconds: PingOption = 20.0,
    header_timeout: HeaderTimeoutOption = 10.0,
    connections_per_address: PerAddressOption = 256,
    log_format: LogOption = LogChoice.text,
    cors_origins: CorsOption = "*",
    bus: Annotated[
        str | None,
        typer.Option(
            help="Publish the feed to Redis (redis://HOST:PORT/DB) for feed edges "
            "(burstmarket feed); without it the feed is this process's alone."
        ),
    ] = None,
    islands: Annotated[
        str | None,
        typer.Option(
            help="Run only these islands (comma-separated), each leased on --bus: a second "
            "process claiming one refuses to start."
        ),
    ] = None,
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="How long an island's lease outlives its owner's last "
            "renewal (another process may take the island over after that).",
        ),
    ] = 10.0,
    checkpoint_mib: Annotated[
        float,
        typer.Option(
            min=0.01,
            help="The store folds its write-ahead log into its file (a checkpoint) once the "
            "log has grown past this many MiB.",
        ),
    ] = 16.0,
) -> None:
    """Run the market service (operator token from BURSTMARKET_OPERATOR_TOKEN).

    The dashboard is at http://HOST:PORT/. With --simulate or --speed and no
    BURSTMARKET_OPERATOR_TOKEN, a random operator token is made for this process only; it is
    printed only on the local demo, --simulate on a loopback address.
    """
    import dataclasses
    import logging
    import os
    import secrets

    from burstmarket import logsafe
    from burstmarket.api.app import create_app
    from burstmarket.lease import LeaseUnavailable
    from burstmarket.server import PortUnavailable
    from burstmarket.server import serve as run_server
    from burstmarket.store import PRIVATE_UMASK, StoreOpenError

    logsafe.configure(log_format.value)
    log = logging.getLogger("burstmarket.serve")
    settings = _settings(
        log,
        clock="manual" if speed is not None else clock.value,
        data_dir=data_dir,
        host=host,
        port=port,
        tick_seconds=tick_seconds,
        rate_per_second=rate_limit,
        rate_burst=rate_burst,
        feed_backlog=feed_backlog,
        feed_ping_seconds=feed_ping_seconds,
        header_timeout_seconds=header_timeout,
        connections_per_address=connections_per_address,
        log_format=log_format.value,
        cors_origins=_listed(cors_origins),
        bus=bus,
        islands=None if islands is None else _listed(islands),
        lease_seconds=lease_seconds,
        checkpoint_mib=checkpoint_mib,
    )
    made = (simulate or speed is not None) and settings.operator_token is None
    if made:
        settings = dataclasses.replace(settings, operator_token=secrets.token_urlsafe(32))
    shown: OperatorShown = "no"
    if local_demo(host, simulate):
        shown = "token" if made else "variable"
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"  # noqa: S104

    def announce() -> None:
        """The socket is bound and the leases in hand: the banner, the log's first lines (the
        store opens right after)."""
        log.info(
            "burstmarket %s: dashboard %s/ (port %d, data dir %s)",
            __version__,
            url,
            port,
            data_dir.resolve(),
        )
        log.info("console %s/console (tenants sign in with a cluster token)", url)
        log.info(
            "%s; simulated tenants %s",
            _pace(settings.clock, tick_seconds, speed),
            "on" if simulate else "off",
        )

    def started() -> None:
        """The store is open: the engine compiled, and the simulation started."""
        _warm_up_the_engine(log)
        if simulate or speed is not None:
            from burstmarket.simulation.live import LiveOptions, start

            assert settings.operator_token is not None
            start(
                LiveOptions(
                    base_url=url,
                    operator_token=settings.operator_token,
                    data_dir=data_dir,
                    tick_seconds=tick_seconds,
                    tenants=simulate,
                    speed=speed,
                    operator_shown=shown,
                )
            )

    os.umask(PRIVATE_UMASK)  # the store is the tenants' ledger
    try:
        run_server(settings, lambda served: create_app(served, announce), started)
    except (PortUnavailable, StoreOpenError, LeaseUnavailable) as exc:
        log.error("%s", exc)
        raise typer.Exit(code=1) from None


def _warm_up_the_engine(log: logging.Logger) -> None:
    """The engine's kernels compiled (or loaded from numba's cache) before the first tick, so
    that tick takes its usual time (auction/warmup.py)."""
    from burstmarket.auction.warmup import warm_up

    began = time.perf_counter()
    warm_up()
    log.info(
        "auction engine compiled before the first tick in %.1f s (later starts load it from "
        "numba's cache)",
        time.perf_counter() - began,
    )


@app.command()
def feed(
    bus: Annotated[
        str, typer.Option(help="The Redis the market processes publish to (redis://HOST:PORT/DB).")
    ],
    host: HostOption = "127.0.0.1",
    port: PortOption = 8001,
    feed_backlog: BacklogOption = 256,
    feed_ping_seconds: PingOption = 20.0,
    header_timeout: HeaderTimeoutOption = 10.0,
    connections_per_address: PerAddressOption = 256,
    log_format: LogOption = LogChoice.text,
    cors_origins: CorsOption = "*",
) -> None:
    """Run a feed edge: /ws/market, the latest-row market endpoints and the AsyncAPI document,
    fed from the bus, for every island of every market process on it. No store."""
    from burstmarket.api.edge_app import create_edge_app

    _serve_feed(
        create_edge_app,
        f"burstmarket {__version__}: feed edge on ws://{host}:{port}/ws/market, following the "
        f"bus {bus}",
        log_format,
        host=host,
        port=port,
        feed_backlog=feed_backlog,
        feed_ping_seconds=feed_ping_seconds,
        header_timeout_seconds=header_timeout,
        connections_per_address=connections_per_address,
        cors_origins=_listed(cors_origins),
        bus=bus,
    )


@app.command()
def replay(
    history: Annotated[
        Path,
        typer.Option(
            help="A history directory: a data dir's history/, or what simulate or export wrote."
        ),
    ],
    speed: Annotated[
        str,
        typer.Option(
            help="Recorded seconds per wall second, or `max`: each tick once every client has "
            "taken the last."
        ),
    ] = "1",
    islands: Annotated[
        str, typer.Option(help="Only these islands, comma-separated; default all recorded.")
    ] = "",
    start: Annotated[
        str | None, typer.Option(help="First time replayed, RFC 3339 (UTC if no zone).")
    ] = None,
    end: Annotated[str | None, typer.Option(help="End, exclusive, RFC 3339 (UTC if no zone).")] = (
        None
    ),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8002,
    feed_backlog: BacklogOption = 256,
    feed_ping_seconds: PingOption = 20.0,
    header_timeout: HeaderTimeoutOption = 10.0,
    connections_per_address: PerAddressOption = 256,
    log_format: LogOption = LogChoice.text,
    cors_origins: CorsOption = "*",
) -> None:
    """Serve /ws/market, the latest-row market endpoints and the AsyncAPI document from a
    recorded period of the Parquet history, in the live protocol (from_tick included), its
    ticks at their recorded pace times SPEED. No store, no market."""
    from burstmarket.api.replay_app import create_replay_app
    from burstmarket.api.web import feed_options
    from burstmarket.feed.replay import Recording, Replay

    pace = _speed(speed)
    first, last = _period(start, end)
    if not history.is_dir():
        raise typer.BadParameter(f"{history} is not a directory", param_hint="--history")
    chosen = _recorded_islands(history, _listed(islands))
    recording = Recording(history, chosen, first, last)
    ticks = recording.ticks
    if not ticks:
        recording.close()
        refuse(f"nothing to replay: {history} holds no tick of {', '.join(chosen)} in that period")

    def app_for(settings: Settings) -> Litestar:
        return create_replay_app(settings, Replay(recording, feed_options(settings), pace))

    paced = "the clients' pace" if pace is None else f"{pace:g}x"
    _serve_feed(
        app_for,
        f"burstmarket {__version__}: replaying {len(ticks)} ticks of {', '.join(chosen)} "
        f"({ticks[0].time.isoformat()} .. {ticks[-1].time.isoformat()}) at {paced} on "
        f"ws://{host}:{port}/ws/market",
        log_format,
        host=host,
        port=port,
        feed_backlog=feed_backlog,
        feed_ping_seconds=feed_ping_seconds,
        header_timeout_seconds=header_timeout,
        connections_per_address=connections_per_address,
        cors_origins=_listed(cors_origins),
    )


def _speed(value: str) -> float | None:
    """`--speed`: a positive number, or None for `max`."""
    if value == "max":
        return None
    try:
        speed = float(value)
    except ValueError:
        speed = 0.0
    if not speed > 0 or speed == float("inf"):
        raise typer.BadParameter("must be a positive number or max", param_hint="--speed")
    return speed


def _serve_feed(
    app_for: Callable[[Settings], Litestar], banner: str, log_format: LogChoice, **flags: object
) -> None:
    """Run a process that serves the feed alone (a feed edge, a replay): its log, its Settings
    from `flags`, the server, `banner` logged once it listens."""
    import logging

    from burstmarket import logsafe
    from burstmarket.server import PortUnavailable
    from burstmarket.server import serve as run_server

    logsafe.configure(log_format.value)
    log = logging.getLogger("burstmarket.feed")
    settings = _settings(log, log_format=log_format.value, **flags)
    try:
        run_server(settings, app_for, lambda: log.info("%s", banner))
    except PortUnavailable as exc:
        log.error("%s", exc)
        raise typer.Exit(code=1) from None


def _recorded_islands(history: Path, asked: Sequence[str]) -> list[str]:
    """The islands asked for, every island of `history` when none is; one of which it holds no
    history is refused (one line, exit 1)."""
    from burstmarket.export import islands

    known = islands(history)
    unknown = [name for name in asked if name not in known]
    if unknown:
        refuse(
            f"no history of island {', '.join(unknown)} in {history} "
            f"(it holds {', '.join(known) or 'no island'})"
        )
    return list(asked) or known


def _settings(log: logging.Logger, **flags: object) -> Settings:
    """The service's Settings from its flags, or one line and exit 2."""
    from burstmarket.settings import Settings

    try:
        return Settings.from_env(None, **flags)
    except ValueError as exc:
        log.error("cannot start: %s", exc)
        raise typer.Exit(code=2) from None


def local_demo(host: str, simulate: bool) -> bool:
    """`serve --simulate` bound to a loopback address: the embedded local demo, whose operator
    token is printed for the person at this machine (docs/api.md "Who may call what")."""
    import ipaddress

    if not simulate:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def _listed(value: str) -> tuple[str, ...]:
    """A comma-separated option's items."""
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _pace(clock: str, tick_seconds: float, speed: float | None) -> str:
    """How market time moves, as the banner says it."""
    if speed is not None:
        return (
            f"market time {speed:g}x real time: the manual clock, which the simulation ticks "
            f"every {tick_seconds / speed:.3g} s ({tick_seconds:g} s of market time a tick)"
        )
    if clock == "manual":
        return (
            "market time on the manual clock: it moves only with POST /api/admin/ticks, "
            f"{tick_seconds:g} s a tick"
        )
    return f"market time real time, a tick every {tick_seconds:g} s"


@app.command(name="simulate")
def simulate_history(
    days: Annotated[
        float, typer.Option(min=0.001, help="Days of market time to simulate (fractions too).")
    ] = 1.0,
    out: Annotated[
        Path,
        typer.Option(help="Data dir to write: market.duckdb, history/ (Parquet), simulate.log."),
    ] = Path("data/simulated"),
    tick_seconds: Annotated[
        float,
        typer.Option(
            min=1.0,
            help="Market time between two ticks of an island (30 minutes keeps a simulated "
            "day to 48 ticks per island).",
        ),
    ] = 1800.0,
    seed: Annotated[int, typer.Option(help="Draws the tenants and their behaviour.")] = 1,
) -> None:
    """Generate days of market history as fast as the machine allows.

    The service's own engine, store and feed run in this process on the manual clock; simulated
    tenants (the same as `serve --simulate`) trade through the HTTP API in-process, ticks run
    back to back, and the history is written as Parquet under OUT/history, ready for
    `read_parquet('OUT/history/ticks/**/*.parquet', hive_partitioning = true)`. An OUT that
    holds a market already is continued.
    """
    import asyncio
    import os

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from burstmarket.simulation.history import SimulateOptions, simulate, ticks_for
    from burstmarket.store import PRIVATE_UMASK, StoreOpenError

    if out.exists() and not out.is_dir():
        refuse(f"--out {out} is a file, not a directory")
    os.umask(PRIVATE_UMASK)
    options = SimulateOptions(out=out, days=days, tick_seconds=tick_seconds, seed=seed)
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[time]}"),
        TimeElapsedColumn(),
    )
    try:
        with Progress(*columns) as progress:
            task = progress.add_task("ticks", total=ticks_for(options), time="")
            reached = asyncio.run(
                simulate(
                    options,
                    lambda stats: progress.update(task, advance=1, time=stats.time.isoformat()),
                )
            )
    except StoreOpenError as exc:
        refuse(str(exc))
    typer.echo(f"simulated up to {reached.isoformat()}; history in {out / 'history'}")


@app.command(name="export")
def export_history(
    start: Annotated[str, typer.Option(help="First day or time, RFC 3339 (UTC if no zone).")],
    end: Annotated[str, typer.Option(help="End, exclusive, RFC 3339 (UTC if no zone).")],
    out: Annotated[Path, typer.Option(help="Directory to write the Parquet files to.")],
    data_dir: Annotated[
        Path, typer.Option(help="The service's data dir (its history/ is read).")
    ] = Path("data"),
    island: Annotated[
        list[str] | None, typer.Option(help="Only this island (repeatable); default all.")
    ] = None,
) -> None:
    """Export the market history of [START, END) to a directory of Parquet.

    Reads DATA_DIR/history (safe beside a running service) and writes the same layout,
    `OUT/<table>/island=<id>/month=<YYYY-MM>/<start>_<end>.parquet`, for the tables ticks,
    cluster_rates, allocations and ladder.
    """
    from rich.progress import Progress

    from burstmarket.export import export

    first, last = _utc(start, "--start"), _utc(end, "--end")
    if last <= first:
        raise typer.BadParameter("must be after --start", param_hint="--end")
    history = data_dir / "history"
    if not history.is_dir():
        raise typer.BadParameter(f"{history} holds no history", param_hint="--data-dir")
    _recorded_islands(history, island or [])
    with Progress(transient=True) as progress:
        task = progress.add_task("exporting", total=None)
        try:
            written = export(
                history, out, first, last, island, lambda path: progress.update(task, advance=1)
            )
        except OSError as exc:
            refuse(f"cannot write {out}: {exc.strerror or exc}")
    if not written:
        refuse(f"nothing to export: {history} holds no history from {start} to {end}")
    typer.echo(f"{len(written)} Parquet files written under {out}")


@app.command(name="verify")
def verify_history(
    history: Annotated[
        Path, typer.Option(help="The history to check: a data dir's history/ (Parquet).")
    ],
    island: Annotated[str | None, typer.Option(help="Only this island; default all.")] = None,
    start: Annotated[
        str | None, typer.Option(help="First tick time, RFC 3339 (UTC if no zone).")
    ] = None,
    end: Annotated[
        str | None, typer.Option(help="End, exclusive, RFC 3339 (UTC if no zone).")
    ] = None,
) -> None:
    """Re-run every recorded tick from the history alone and compare it with the record.

    No store and no server: the engine's own code runs on each tick's recorded bids, and its
    winners' nodes, payments, rates, receipts, ladder and statistics are compared to the µUSD
    with what the history holds, and the ledger with billing recomputed from the rates. Prints
    each difference on a line, then a summary; exits 1 on any difference, 0 on none.
    """
    import os

    from rich.progress import Progress

    from burstmarket.record.verify import recorded_islands, verify

    first, last = _period(start, end)
    known = recorded_islands(history)
    if not known:
        raise typer.BadParameter(f"{history} holds no recorded ticks", param_hint="--history")
    if island is not None and island not in known:
        raise typer.BadParameter(
            f"no history of island {island} in {history} (it holds {', '.join(known)})",
            param_hint="--island",
        )
    shown = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    with Progress(transient=True, disable=not shown) as progress:
        task = progress.add_task("verifying ticks", total=None)
        found = verify(
            history,
            island,
            first,
            last,
            lambda done, total: progress.update(task, completed=done, total=total),
        )
    for difference in found.differences:
        typer.echo(str(difference))
    typer.echo(found.summary())
    if found.differences:
        raise typer.Exit(code=1)


@app.command(name="backtest")
def backtest_strategy(
    history: Annotated[
        Path, typer.Option(help="A history dir (DATA_DIR/history, or simulate's OUT/history).")
    ],
    strategy: Annotated[
        Path, typer.Option(help="A Python file defining decide(tick, own) (docs/analysts.md).")
    ],
    cluster: Annotated[
        str | None, typer.Option(help="The recorded cluster whose place the strategy takes.")
    ] = None,
    as_newcomer: Annotated[
        str | None, typer.Option(help="Or: the strategy is a new cluster of this kind (vm, k8s).")
    ] = None,
    island: Annotated[
        str | None, typer.Option(help="The newcomer's island (when the record has several).")
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="The period's start, RFC 3339 (default: the record's).")
    ] = None,
    end: Annotated[
        str | None, typer.Option(help="Its end, exclusive, RFC 3339 (default: the record's).")
    ] = None,
    out: Annotated[Path, typer.Option(help="The Parquet file of one row per tick.")] = Path(
        "backtest.parquet"
    ),
) -> None:
    """Re-run a recorded period with a strategy's bids in one cluster's place, or as a newcomer.

    Everyone else's recorded demand is placed again at its market time and every tick runs
    again, the whole tick, with the service's own code; prints what the strategy held, waited
    and paid beside what the cluster did in the record. The backtest market's log goes to
    OUT's name with `.log`.
    """
    import logging

    from rich.progress import Progress

    from burstmarket import logsafe
    from burstmarket.record import backtest as bt
    from burstmarket.record.strategy import StrategyError, load
    from burstmarket.states import Kind

    kinds = typing.get_args(Kind)

    if (cluster is None) == (as_newcomer is None):
        raise typer.BadParameter("name --cluster or --as-newcomer KIND, one of them")
    if as_newcomer is not None and as_newcomer not in kinds:
        raise typer.BadParameter(f"one of {', '.join(kinds)}", param_hint="--as-newcomer")
    first, last = _period(start, end)
    try:
        decide = load(strategy)
    except StrategyError as exc:
        raise typer.BadParameter(str(exc), param_hint="--strategy") from None
    # the backtest market's own log lines (a refusal of the strategy's bids) go beside --out
    logsafe.configure("text", logging.FileHandler(out.with_suffix(".log")))
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per replayed request
    options = bt.Options(
        history,
        decide,
        cluster=cluster,
        newcomer=as_newcomer,  # type: ignore[arg-type]  # one of the kinds, checked above
        island=island,
        start=first,
        end=last,
    )
    try:
        with Progress(transient=True) as progress:
            task = progress.add_task("ticks", total=None)
            result = bt.backtest(
                options, lambda done, total: progress.update(task, completed=done, total=total)
            )
    except bt.NoHistory as exc:
        raise typer.BadParameter(str(exc), param_hint="--history") from None
    except bt.BacktestError as exc:
        raise typer.BadParameter(str(exc)) from None
    except StrategyError as exc:
        raise typer.BadParameter(str(exc), param_hint="--strategy") from None
    try:
        result.ticks.write_parquet(out)
    except OSError as exc:
        refuse(f"cannot write {out}: {exc.strerror or exc}")
    typer.echo(bt.report(result, out))


def _period(start: str | None, end: str | None) -> tuple[datetime | None, datetime | None]:
    """--start and --end, each optional (the history's first or last tick then), or exit 2."""
    first = None if start is None else _utc(start, "--start")
    last = None if end is None else _utc(end, "--end")
    if first is not None and last is not None and last <= first:
        raise typer.BadParameter("must be after --start", param_hint="--end")
    return first, last


def _utc(value: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter("must be an RFC 3339 date or time", param_hint=name) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def main() -> None:
    """Run the command line. Whatever a command refuses, a wrong option or value included, is
    one line on stderr, `burstmarket [<command>]: <why>`, and a non-zero exit: 2 for a usage
    error, 1 for what cannot be done."""
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(2)  # `burstmarket` alone: the help has been shown
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else _command()
        hint = f" (see {where} -h)" if context is not None else ""
        typer.echo(f"{where}: {exc.format_message()}{hint}", err=True)
        code = exc.exit_code
    except typer.Abort:
        code = 1
    sys.exit(code if isinstance(code, int) else 0)


def _command() -> str:
    """`burstmarket <command>` as it was run."""
    command = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    return "burstmarket" if command is None else f"burstmarket {command}"
