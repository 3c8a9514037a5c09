"""The command line refuses what it cannot do with one line and a non-zero exit: a port outside
1–65535, a port in use (before anything starts), an island or a range `export` has no history
for; it answers `-h`, `--version`, and `make run PORT=...`; and it prints the operator
token on the local demo only (`serve --simulate` bound to loopback)."""

from __future__ import annotations

import os
import socket
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from burstmarket.cli import local_demo
from tests.conftest import (
    BURSTMARKET,
    OPERATOR_TOKEN,
    Ran,
    RedisServer,
    free_port,
    run_in_process,
)

REPOSITORY = Path(__file__).resolve().parent.parent


def burstmarket(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
    env["BURSTMARKET_OPERATOR_TOKEN"] = OPERATOR_TOKEN
    return subprocess.run(
        [str(BURSTMARKET), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def one_line(done: subprocess.CompletedProcess[str] | Ran) -> str:
    """The only line the command wrote, wherever it wrote it."""
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.mark.e2e  # runs `burstmarket serve`, which a regression would leave serving
@pytest.mark.parametrize("port", ["0", "65536", "73938", "http"])
def test_a_port_outside_1_to_65535_exits_2_naming_the_option(port: str, tmp_path: Path) -> None:
    done = burstmarket("serve", "--port", port, "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith("burstmarket serve: Invalid value for '--port': "), line
    assert not (tmp_path / "data").exists()  # nothing was started


@pytest.mark.e2e  # runs `burstmarket serve`, which a regression would leave serving
def test_a_busy_port_is_one_line_and_exit_1_before_anything_starts(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        done = burstmarket(
            "serve", "--simulate", "--port", str(port), "--data-dir", str(tmp_path / "data")
        )
        assert done.returncode == 1
        line = one_line(done)
        assert " ERROR burstmarket.serve: " in line
        assert line.endswith(
            f"cannot listen on 127.0.0.1:{port}: the port is in use by another process"
        ), line
        assert not (tmp_path / "data").exists()  # the store was never opened
        holder.setblocking(False)
        with pytest.raises(BlockingIOError):  # and no simulated tenant called the port's holder
            holder.accept()


@pytest.mark.e2e  # runs `burstmarket serve`, which a regression would leave serving
@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["serve", "--islands", "north"], "--islands needs --bus"),
        (["serve", "--bus", "http://x", "--islands", "north"], "--bus must be a Redis URL"),
        (["feed", "--bus", "localhost:6379"], "--bus must be a Redis URL"),
    ],
)
def test_the_bus_options_refuse_what_cannot_work(args: list[str], why: str, tmp_path: Path) -> None:
    done = burstmarket(
        *args,
        "--port",
        str(free_port()),
        *(["--data-dir", str(tmp_path / "data")] if args[0] == "serve" else []),
    )
    assert done.returncode == 2
    assert why in one_line(done)
    assert not (tmp_path / "data").exists()


@pytest.mark.e2e  # runs `burstmarket serve`, which a regression would leave serving
def test_without_redis_serve_bus_refuses_before_the_store_opens(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    done = burstmarket(
        "serve",
        "--bus",
        f"redis://127.0.0.1:{port}/0",
        "--islands",
        "north",
        "--port",
        str(free_port()),
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert done.returncode == 1
    assert "cannot claim the islands' leases: the bus does not answer" in one_line(done)
    assert not (tmp_path / "data").exists()


def test_a_store_that_cannot_open_gives_its_leases_back(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    bus = ["--bus", redis_server.url, "--islands", "north"]
    done = burstmarket("serve", *bus, "--port", str(free_port()), "--data-dir", str(blocked))
    assert done.returncode == 1
    assert "island north" not in one_line(done)
    # At once, not a lease's life later: the lease was given back.
    done = burstmarket("serve", *bus, "--port", str(free_port()), "--data-dir", str(blocked))
    assert "is run by another process" not in one_line(done)


@pytest.mark.e2e  # runs `burstmarket serve`, which a regression would leave serving
def test_help_and_version() -> None:
    for args in (["-h"], ["--help"], ["serve", "-h"], ["export", "-h"], ["simulate", "-h"]):
        done = burstmarket(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Usage: burstmarket" in done.stdout
    done = burstmarket("--version")
    assert (done.returncode, done.stdout) == (0, f"burstmarket {version('burstmarket')}\n")
    unknown = burstmarket("serve", "--prot", "9000")
    assert unknown.returncode == 2
    assert one_line(unknown).startswith("burstmarket serve: No such option: --prot")


def test_help_flows_each_paragraph_of_a_command_as_one_text() -> None:
    """A command's help is its docstring, each paragraph rewrapped to the terminal: never cut
    where the source broke its lines (a line of the source, then a word alone)."""
    import inspect

    import typer

    from burstmarket.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert "backtest" in commands
    for name, command in commands.items():
        done = run_in_process(name, "--help", env={"COLUMNS": "400"})
        assert done.returncode == 0, done.stderr
        shown = {" ".join(line.strip("│ ").split()) for line in done.stdout.splitlines()}
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            text = " ".join(paragraph.replace("`", "").split())
            assert text in shown, (name, text, done.stdout)


def test_export_refuses_an_island_or_a_range_it_has_no_history_of(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "history" / "ticks" / "island=ref").mkdir(parents=True)
    common = ["export", "--data-dir", str(data), "--out", str(tmp_path / "out")]
    unknown = run_in_process(
        *common, "--start", "2025-01-01", "--end", "2025-01-02", "--island", "nope"
    )
    assert unknown.returncode == 1
    assert one_line(unknown) == (
        f"burstmarket export: no history of island nope in {data / 'history'} (it holds ref)"
    )
    empty = run_in_process(*common, "--start", "2025-01-01", "--end", "2025-01-02")
    assert empty.returncode == 1
    assert one_line(empty) == (
        f"burstmarket export: nothing to export: {data / 'history'} "
        "holds no history from 2025-01-01 to 2025-01-02"
    )
    backwards = run_in_process(*common, "--start", "2025-01-02", "--end", "2025-01-01")
    assert backwards.returncode == 2
    assert one_line(backwards).startswith("burstmarket export: Invalid value for --end: ")
    assert not (tmp_path / "out").exists()


def test_simulate_refuses_an_out_that_is_a_file(tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.write_text("")
    done = run_in_process("simulate", "--days", "0.01", "--out", str(out))
    assert done.returncode == 1
    assert one_line(done) == f"burstmarket simulate: --out {out} is a file, not a directory"


def test_make_run_takes_the_port() -> None:
    done = subprocess.run(
        ["make", "-n", "run", "PORT=9000"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (command,) = [line for line in done.stdout.splitlines() if "burstmarket serve" in line]
    assert command.endswith("burstmarket serve --simulate --port 9000")


@pytest.mark.parametrize(
    ("host", "simulate", "printed"),
    [
        ("127.0.0.1", True, True),
        ("127.0.0.2", True, True),
        ("::1", True, True),
        ("localhost", True, True),
        ("127.0.0.1", False, False),  # --speed alone, or no simulation at all
        ("0.0.0.0", True, False),  # every address: anyone on the network
        ("::", True, False),
        ("10.1.2.3", True, False),
        ("192.168.0.7", True, False),
        ("market.example.com", True, False),
    ],
)
def test_the_operator_token_is_printed_on_simulate_bound_to_loopback_only(
    host: str, simulate: bool, printed: bool
) -> None:
    # the tests never bind outside 127.0.0.0/8, so the other addresses are decided here
    assert local_demo(host, simulate) is printed
