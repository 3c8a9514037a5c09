"""`burstmarket serve` and `burstmarket feed` for the tests, forked from a process that has
imported the service and compiled its engine once.

A fresh interpreter spends about 2.4 CPU-seconds before it serves: importing litestar, DuckDB,
pyarrow and numba, loading the engine's kernels, and building its first app (litestar's and
msgspec's caches of every handler's types are cold). The suite starts some 200 servers, so that
is a third of its CPU. Each pytest-xdist worker instead keeps one multiprocessing forkserver
(the standard library's: a process that forks on request) whose preload is this module: it
imports what `serve` and `feed` import, warms the engine up, and builds, starts and stops one
app on a throwaway store; every server is a fork of it running the command line's own
`main()` with its own argv, environment, working directory and log file. So a server is still
a process of its own on its own port and data dir, started, signalled and killed like any
other; only the imports and the warm caches are shared. Tests of the installed command itself
(tests/test_wheel.py, the `--version` and `--help` checks) still run the executable.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# the preload: what `serve` and `feed` import, and the engine compiled (cli.py imports lazily)
from burstmarket.api.app import create_app
from burstmarket.auction.warmup import warm_up
from burstmarket.cli import main
from burstmarket.settings import Settings


def _warm() -> None:
    """The engine compiled, and one app built, started and stopped (its store closed, so no
    thread of it is left to fork)."""
    warm_up()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(clock="manual", data_dir=Path(folder), operator_token="warm")
        app = create_app(settings)

        async def start_and_stop() -> None:
            async with app.lifespan():
                pass

        asyncio.run(start_and_stop())
    gc.collect()
    gc.freeze()  # what the forks share stays out of their collector's passes (and unwritten)


if "pytest" not in sys.modules:
    _warm()  # in the forkserver only: a pytest worker importing this module skips it

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload([__name__])


def _run(argv: list[str], env: dict[str, str], log_path: str, cwd: str) -> None:
    """In the fork: the command's argv, environment, directory and output, then `main()`, and
    at the end what a fresh interpreter runs on exit (atexit: logging's flush among them)."""
    out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.close(null)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (the process's own stdout)
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = argv
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        main()
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()


class Forked:
    """The part of `subprocess.Popen` the tests use, for a server forked by the forkserver (it
    is the forkserver's child, so its exit code comes from multiprocessing, not `waitpid`)."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def poll(self) -> int | None:
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(["burstmarket"], timeout or 0)
        return self._process.exitcode


def start(args: list[str], env: dict[str, str], log_path: Path) -> Forked:
    """`burstmarket <args>` with `env` as its whole environment and both its outputs appended to
    `log_path`, forked from this worker's preloaded forkserver (started on first use)."""
    process = _context.Process(
        target=_run,
        args=(["burstmarket", *args], env, str(log_path), os.getcwd()),
        daemon=False,
    )
    process.start()
    return Forked(process)
