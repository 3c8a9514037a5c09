"""Shared fixtures: a real `burstmarket serve` subprocess on a free loopback port, and an
in-process market on a real DuckDB file.

`server` starts one with `--clock manual`, a temporary `--data-dir` and an operator token, and
yields a `Server` (base URL, operator token, log file, data dir). `start_server` is the factory
behind it, for tests that need other flags or several runs on one data dir (crash tests);
`shared_server` is one per test module. `market` (`make_market`) is a `Market` in this process.

How the suite is split:

- Every test that starts a server is marked `e2e`, so `pytest -m "not e2e"` is the fast loop: a
  test using a fixture of SERVER_FIXTURES is marked here, and any other test that starts a
  server (`burstmarket serve`, uvicorn, a listening socket) while not marked fails
  (`no_servers`). The fast loop does not even import the folders of E2E_FOLDERS, and its
  property tests draw a quarter of their examples (`examples`); a full run draws them all.
- Every run, fast loop or full, runs on every core (pytest-xdist, `-n auto` in pyproject.toml),
  with twice as many workers as cores (`pytest_xdist_auto_num_workers`): a server forked
  ready-made (tests/preloaded.py) costs little CPU, so a worker spends most of its time waiting
  on its servers, its browser and its sockets, and one worker per core leaves the cores idle.
  Whole files go to a worker (`--dist loadfile`), so a module's
  fixtures (`shared_server`, the browser) are built once. Each server has its own free port
  (`free_port`; one another process took meanwhile is picked again) and its own temporary data
  dir, so servers run side by side.
- A test that measures a server's pace, CPU or memory against the same run's calm window is
  marked `alone`: it waits for the tests beside it to end and none starts beside it (`turn`),
  so its calm window and its measured windows see the same machine. Its file, holding it
  alone, is handed out last, so it waits for the last tests only, never for a file of minutes.
  It still compares with its own calm window only, never with a wall-clock constant: the
  machine may be busy with other work throughout.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from hypothesis import settings

from tests.constants import T0

if TYPE_CHECKING:
    from burstmarket.market.market import Market
    from tests.preloaded import Forked

OPERATOR_TOKEN = "test-operator-token"
STARTUP_SECONDS = 180
"""How long a server may take to answer after its start: 2 s on a quiet host, over 30 s
beside a machine's worth of other work."""
PORT_TAKEN = "the port is in use by another process"
"""What `burstmarket serve` says when it cannot listen (burstmarket/server.py)."""
PORT_ATTEMPTS = 3
REQUEST_SECONDS = 240
"""How long a test's request may take: a request running many ticks takes seconds on a quiet
host and over 30 beside other work (pytest-timeout's 300 s per test still bounds a hang)."""
BURSTMARKET = Path(sys.executable).parent / "burstmarket"  # the installed command line


@dataclass(frozen=True)
class Ran:
    """What a command did, as `subprocess.CompletedProcess` says it."""

    returncode: int
    stdout: str
    stderr: str


def run_in_process(*args: str, stdin: str = "", env: dict[str, str | None] | None = None) -> Ran:
    """`burstmarket <args>` run by the command line's own `main()` in this process, with argv,
    stdin, stdout, stderr and `env` changes of its own (click's test isolation): the whole path
    of a command, its refusals and exit codes included, without a fresh interpreter's imports
    (about 0.7 s a run). Tests of the installed command itself run `BURSTMARKET`."""
    from burstmarket.cli import main

    with (
        CliRunner().isolation(input=stdin, env=env) as (out, err, _),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(sys, "argv", ["burstmarket", *args])
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code
        else:
            code = 0
        return Ran(
            code if isinstance(code, int) else 1, out.getvalue().decode(), err.getvalue().decode()
        )


LOG_LINE = re.compile(r"(?P<time>\S+Z) (?P<level>[A-Z]+) (?P<logger>[\w.]+): (?P<message>.*)")
"""A line of the text log format: `TIME LEVEL LOGGER: MESSAGE` (burstmarket/logsafe.py)."""


def records(log: str) -> list[tuple[str, str]]:
    """(logger, message) of every line of a text-format log; a line of any other shape (a
    traceback's indented lines) is left out."""
    found = (LOG_LINE.fullmatch(line) for line in log.splitlines())
    return [(match["logger"], match["message"]) for match in found if match]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    token: str
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | Forked
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=REQUEST_SECONDS)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def messages(self, logger: str) -> list[str]:
        """The messages of one logger's lines in the log (`--log-format text`)."""
        return [message for name, message in records(self.log()) if name == logger]

    def refused_lines(self) -> list[str]:
        """Every `REFUSED reason=...` message, in order."""
        return self.messages("burstmarket.refused")

    def operator(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def kill(self) -> None:
        """kill -9: no shutdown code runs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.client.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.client.close()


StartServer = Callable[..., Server]


def _came_up(server: Server, up: str) -> bool:
    """Whether the server answers `up`; False if it exited because another process took its
    port between `free_port` and its start (tests of other workers and runs pick ports too);
    any other failure to start raises, with its log."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if server.process.poll() is not None:
            if PORT_TAKEN in server.log():
                return False
            raise RuntimeError(f"server exited at start:\n{server.log()}")
        try:
            if server.client.get(up).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.kill()
            raise RuntimeError(f"server did not start in {STARTUP_SECONDS} s:\n{server.log()}")
        time.sleep(0.05)


@contextmanager
def _servers(tmp_path: Path) -> Iterator[StartServer]:
    started: list[Server] = []

    def start(
        *flags: str,
        data_dir: Path | None = None,
        env: dict[str, str] | None = None,
        operator_token: str | None = OPERATOR_TOKEN,
        command: Path = BURSTMARKET,
        subcommand: str = "serve",
    ) -> Server:
        """`burstmarket serve` (of `command`, the installed one unless told), or with
        subcommand="feed" a feed edge (`flags` then name its bus; it has no data dir and is up
        once it answers /healthz)."""
        data = data_dir or tmp_path / "data"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("BURSTMARKET_")}
        if operator_token is not None:
            environ["BURSTMARKET_OPERATOR_TOKEN"] = operator_token
        environ.update(env or {})
        args = list(flags) or ["--clock", "manual"]
        where = ["--data-dir", str(data)] if subcommand == "serve" else []
        up = "/api/islands" if subcommand == "serve" else "/healthz"
        for _ in range(PORT_ATTEMPTS):
            port = free_port()
            log_path = tmp_path / f"server-{len(started)}.log"
            argv = [subcommand, *where, "--host", "127.0.0.1", "--port", str(port), *args]
            process: subprocess.Popen[bytes] | Forked
            if command == BURSTMARKET:  # forked, its imports done (tests/preloaded.py)
                from tests import preloaded

                process = preloaded.start(argv, environ, log_path)
            else:
                with log_path.open("wb") as log:
                    process = subprocess.Popen(
                        [str(command), *argv], stdout=log, stderr=subprocess.STDOUT, env=environ
                    )
            server = Server(
                f"http://127.0.0.1:{port}", operator_token or "", data, log_path, process
            )
            started.append(server)
            if _came_up(server, up):
                return server
        raise RuntimeError(f"no port free in {PORT_ATTEMPTS} attempts:\n{server.log()}")

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    with _servers(tmp_path) as start:
        yield start


@pytest.fixture
def server(start_server: StartServer) -> Server:
    """A fresh manual-clock server of its own (10 s ticks)."""
    return start_server()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One manual-clock server per test module, 5-minute ticks (a VM window is 12 ticks): tests
    sharing it create their own islands, accounts and clusters."""
    with _servers(tmp_path_factory.mktemp("shared")) as start:
        yield start("--clock", "manual", "--tick-seconds", "300")


# --- an in-process market on a real DuckDB file -------------------------------------------

MakeMarket = Callable[..., "Market"]


@pytest.fixture
def make_market(tmp_path: Path) -> Iterator[MakeMarket]:
    """`make_market(clock=None, data_dir=None, **settings)`: a `Market` in this process on a
    DuckDB file of its own (under `data_dir`, else this test's temporary folder), on a manual
    clock at T0 unless given one, its Settings the defaults but `clock="manual"` and
    `settings`. Make another on the same `data_dir` after closing the first (`market.db.close()`)
    to restart it; every store is closed at the end."""
    from burstmarket.clock import ManualClock
    from burstmarket.market.market import Market
    from burstmarket.settings import Settings
    from burstmarket.store import Database

    made: list[Market] = []

    def make(
        clock: ManualClock | None = None, data_dir: Path | None = None, **settings: Any
    ) -> Market:
        config = Settings(clock="manual", data_dir=data_dir or tmp_path, **settings)
        market = Market(Database(config.database_path), clock or ManualClock(T0), config)
        made.append(market)
        return market

    yield make
    for market in made:
        market.db.close()


@pytest.fixture
def market(make_market: MakeMarket) -> Market:
    """An in-process market on a temporary DuckDB file: manual clock at T0, default Settings
    (10 s ticks, the reference island)."""
    return make_market()


# --- the fast loop: e2e is every test that starts a server ---------------------------------

TESTS = Path(__file__).parent
E2E_FOLDERS = {"e2e", "browser", "feed"}
"""Folders of tests/ whose every test starts a server (the service, or the feed's own routes
under uvicorn)."""
SERVER_FIXTURES = {"server", "start_server", "shared_server", "redis_server"}
"""Fixtures that start the service (`server` is also tests/feed/conftest.py's feed server), or
a redis-server."""


def fast_loop(config: pytest.Config) -> bool:
    """Whether this run is the fast loop (`-m "not e2e"`: no test that starts a server)."""
    return "not e2e" in (config.option.markexpr or "")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fast loop does not even import the folders whose every test starts a server: their
    imports (playwright, schemathesis, websocket clients) cost each worker seconds."""
    if fast_loop(config) and collection_path.parent == TESTS:
        return collection_path.name in E2E_FOLDERS or None
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        if folder in E2E_FOLDERS or SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
    # The files of minutes first (`early`: a simulated week), then those whose tests start
    # servers (most of the run's time), in their order, then the others, and the files of
    # `alone` tests last: pytest-xdist hands files out in this order (`--no-loadscope-reorder`),
    # so the run does not end on one long file while the other workers have nothing left, and
    # an `alone` test waits only for the tests running at the end, never for a file of minutes
    # (every worker would wait with it).
    early = {item.path for item in items if item.get_closest_marker("early") is not None}
    serving = {item.path for item in items if item.get_closest_marker("e2e") is not None}
    alone = {item.path for item in items if item.get_closest_marker(ALONE) is not None}
    items.sort(
        key=lambda item: (item.path in alone, item.path not in early, item.path not in serving)
    )


# --- every run on every core; a test that measures the machine's calm runs alone ----------

ALONE = "alone"
"""The marker (pyproject.toml) of a test that measures a server's pace, CPU or memory against
the same run's calm window: no other test of the run runs beside it (`turn`)."""


@contextmanager
def turn(item: pytest.Item) -> Iterator[None]:
    """Under pytest-xdist, a test of every worker holds the run's room shared while it runs
    (setup and teardown included), and an `alone` test holds it alone: it waits for the tests
    running beside it to end, and no other starts until it has. The gate, taken on the way in,
    keeps a waiting `alone` test from being overtaken. In one process there is nothing to do."""
    if not hasattr(item.config, "workerinput"):
        yield
        return
    import fcntl

    run = Path(item.config.option.basetemp).parent  # the controller's: shared by its workers
    alone = item.get_closest_marker(ALONE) is not None
    with (run / "alone.gate").open("a") as gate, (run / "alone.room").open("a") as room:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # closing the files releases the locks


# --- property tests: all their examples in a full run, a quarter in the fast loop ---------

settings.register_profile("fast-loop", max_examples=25)
"""A quarter of Hypothesis's default 100 examples. The fast loop loads it unless a run names a
profile (`--hypothesis-profile`); a full run (`make test`, CI) keeps the default."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: twice as many workers as cores (the module's docstring says why)."""
    return 2 * len(os.sched_getaffinity(0))


def pytest_configure(config: pytest.Config) -> None:
    if fast_loop(config) and config.getoption("--hypothesis-profile") is None:
        settings.load_profile("fast-loop")


def examples(full: int) -> int:
    """How many examples a property test written for `full` draws under the profile loaded:
    all of them by default, a quarter (five at least) under `fast-loop`."""
    return max(5, full * settings.default.max_examples // 100)


class StartsAServer(Exception):
    """A test not marked e2e started a server."""


@contextmanager
def no_servers(test: str) -> Iterator[None]:
    """While `test` runs, starting a server raises StartsAServer: a `burstmarket serve`
    subprocess, a uvicorn server, or any socket listening."""

    def refuse(what: str) -> NoReturn:
        raise StartsAServer(
            f"{test} starts {what} but is not marked e2e: mark it @pytest.mark.e2e (a test "
            "using a server fixture of tests/conftest.py is marked already)"
        )

    def listen(self: socket.socket, *args: Any) -> None:
        refuse("a listening socket")

    def uvicorn_server(self: uvicorn.Server, *args: Any, **kwargs: Any) -> None:
        refuse("a uvicorn server")

    popen = subprocess.Popen.__init__

    def popen_unless_serve(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        argv = args.split() if isinstance(args, str) else [str(arg) for arg in args]
        if "serve" in argv and "--help" not in argv:
            refuse(f"a server ({' '.join(argv)})")
        popen(self, args, *rest, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "listen", listen)
        patch.setattr(uvicorn.Server, "__init__", uvicorn_server)
        patch.setattr(subprocess.Popen, "__init__", popen_unless_serve)
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    with turn(item):
        if item.get_closest_marker("e2e") is not None:
            return (yield)
        with no_servers(item.nodeid):
            return (yield)


@dataclass
class RedisServer:
    """A real `redis-server` (Debian's; `make test` installs it) on a free loopback port, with
    no persistence: stopped and started again, it comes back empty, as a lost Redis would."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {(self.folder / 'redis.log')}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is missing: `make test` installs it (apt-get)")
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
