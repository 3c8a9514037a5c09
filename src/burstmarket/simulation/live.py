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
from typing import Literal

import httpx

from burstmarket.client import OperatorClient
from burstmarket.settings import OPERATOR_TOKEN_ENV
from burstmarket.simulation.pace import Driven, Pace, RealTime, run
from burstmarket.simulation.population import OFFERS
from burstmarket.simulation.world import YOUR_ACCOUNT, World

log = logging.getLogger(__name__)

READY_SECONDS = 60.0
WALK_THROUGH = "docs/first-five-minutes.md"

OperatorShown = Literal["token", "variable", "no"]
"""What the announcement says of the operator token: the token itself (the local demo made it),
the environment variable it came from (the local demo, the person set it), or nothing."""


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
    operator_shown: OperatorShown = "no"


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
                    make_yours=True,
                )
            await run(world, pace, ready=lambda w: print(announcement(options, w), flush=True))
        except Exception:
            # the service goes on without its simulation; say why it stopped
            log.exception("simulation stopped")


def announcement(options: LiveOptions, world: World) -> str:
    """Where the console is and whom to sign in as, for the person who ran `make run`: on
    standard output, never into the service's log. Their own tenants first, then the simulated
    ones to watch; on the local demo the operator token; then the line to paste into a shell
    for the curl lines of docs/first-five-minutes.md. The tenants' tokens stay in the
    simulation's own file, readable by its owner only."""
    yours = world.your_tenants
    lines = [
        f"burstmarket: console {options.base_url}/console (tokens kept in {world.state_path}, "
        "mode 0600)",
        f"yours, which the simulation never touches (account {YOUR_ACCOUNT}, made funded, with "
        "no spend limit and nothing declared):",
        *(_cluster_line(t.kind, t.name, t.island, token) for t, token in yours),
        "watch, or sign in as a simulated tenant:",
        *(_cluster_line(s.kind, s.name, s.island, token) for s, token in world.console_tenants()),
    ]
    # the walk-through's tenants: the VM and the Kubernetes one on the island selling base load
    island = OFFERS[0].island
    mine = {t.kind: token for t, token in yours if t.island == island}
    exports = [f"BM={options.base_url}", f"VM_TOKEN={mine['vm']}", f"K8S_TOKEN={mine['k8s']}"]
    if options.operator_shown == "token":
        lines.append(
            "operator token, for this local demo only (bound to this machine's loopback): "
            + options.operator_token
        )
        exports.append(f"OPERATOR_TOKEN={options.operator_token}")
    elif options.operator_shown == "variable":
        lines.append(f"operator token: yours, from {OPERATOR_TOKEN_ENV}")
        exports.append(f'OPERATOR_TOKEN="${OPERATOR_TOKEN_ENV}"')
    lines += [
        f"first five minutes (island {island}): {WALK_THROUGH} or the console's card; for its "
        "curl lines, first run:",
        "  export " + " ".join(exports),
    ]
    return "\n".join(lines)


def _cluster_line(kind: str, name: str, island: str, token: str) -> str:
    return f"  {'VM' if kind == 'vm' else 'Kubernetes'} cluster {name} (island {island}): {token}"


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
