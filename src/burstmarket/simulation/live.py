"""`serve --simulate` / `--speed`: the simulation beside the service, in the same process.

It runs on its own event loop in a daemon thread and reaches the service the way any tenant
does, over HTTP on the loopback address, so it cannot touch the market's internals and it
ends with the process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx

from burstmarket.client import OperatorClient
from burstmarket.simulation.pace import Driven, Pace, RealTime, run
from burstmarket.simulation.world import World

log = logging.getLogger(__name__)

READY_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class LiveOptions:
    base_url: str
    operator_token: str
    data_dir: Path
    tick_seconds: float
    tenants: bool = True
    """Run the simulated tenants (else only the faster clock, if `speed` is set)."""
    speed: float | None = None
    """Market seconds per wall second; None: the service ticks on the wall clock."""
    seed: int = 1


def start(options: LiveOptions) -> threading.Thread:
    # one INFO line per simulated request would drown the service's own log
    logging.getLogger("httpx").setLevel(logging.WARNING)
    thread = threading.Thread(
        target=asyncio.run, args=(_main(options),), name="simulation", daemon=True
    )
    thread.start()
    return thread


async def _main(options: LiveOptions) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            await _wait_ready(http, options.base_url)
            operator = OperatorClient(options.base_url, options.operator_token, http=http)
            pace: Pace = RealTime(options.tick_seconds)
            if options.speed is not None:
                pace = Driven(operator, options.tick_seconds, options.tick_seconds / options.speed)
            world = None
            if options.tenants:
                world = World(
                    options.base_url,
                    options.operator_token,
                    options.data_dir,
                    http=http,
                    seed=options.seed,
                )
            await run(world, pace, ready=lambda w: announce(options.base_url, w))
        except Exception:
            # the service goes on without its simulation; say why it stopped
            log.exception("simulation stopped")


def announce(base_url: str, world: World) -> None:
    """Where the console is and whom to sign in as: on standard output, for the person who
    ran `make run` (never into the service's log). The tokens stay in the simulation's own
    file, readable by its owner only."""
    lines = [
        f"burstmarket: console {base_url}/console — sign in as a simulated tenant "
        f"(tokens kept in {world.state_path}, mode 0600):"
    ]
    for spec, token in world.console_tenants():
        kind = "VM" if spec.kind == "vm" else "Kubernetes"
        lines.append(f"  {kind} cluster {spec.name} (island {spec.island}): {token}")
    print("\n".join(lines), flush=True)


async def _wait_ready(http: httpx.AsyncClient, base_url: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_SECONDS
    while True:
        try:
            if (await http.get(f"{base_url}/api/islands")).status_code == 200:
                return
        except httpx.TransportError:
            if loop.time() > deadline:
                raise
        await asyncio.sleep(0.2)
