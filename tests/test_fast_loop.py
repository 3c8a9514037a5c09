"""The fast loop (`pytest -m "not e2e"`) starts no server: a test that is not marked e2e and
starts one fails (tests/conftest.py)."""

from __future__ import annotations

import socket
import subprocess

import pytest
import uvicorn

from tests.conftest import BURSTMARKET, StartsAServer


def test_a_test_not_marked_e2e_cannot_listen_on_a_socket() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        with pytest.raises(StartsAServer, match="not marked e2e"):
            sock.listen()


def test_a_test_not_marked_e2e_cannot_start_uvicorn() -> None:
    with pytest.raises(StartsAServer, match="uvicorn"):
        uvicorn.Server(uvicorn.Config("burstmarket.server:app"))


def test_a_test_not_marked_e2e_cannot_run_burstmarket_serve() -> None:
    # a port that is no number: were the guard gone, nothing would be left running
    with pytest.raises(StartsAServer, match="burstmarket serve --port none"):
        subprocess.Popen([BURSTMARKET, "serve", "--port", "none"])


def test_other_commands_and_the_help_of_serve_run() -> None:
    for args in (["--help"], ["serve", "--help"]):
        done = subprocess.run([BURSTMARKET, *args], capture_output=True, check=False, timeout=60)
        assert done.returncode == 0, done.stderr


@pytest.mark.e2e
def test_a_test_marked_e2e_may_listen() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
