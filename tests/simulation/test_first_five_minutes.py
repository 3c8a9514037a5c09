"""docs/first-five-minutes.md as a newcomer follows it: `serve --simulate`, the `export` line it
printed pasted into a shell, then every `sh` block of the page run there as written, in order,
each answer checked against what the page says of it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from tests import docs
from tests.conftest import StartServer
from tests.e2e.support import eventually
from tests.simulation.announced import announced

PAGE = "docs/first-five-minutes.md"


def test_every_curl_line_of_the_first_five_minutes_runs_as_written(
    start_server: StartServer,
) -> None:
    assert shutil.which("curl"), "the page's lines are curl lines"
    server = start_server("--simulate", "--speed", "300", operator_token=None)
    export = announced(server).export  # the line the page says to paste first

    def run(block: str) -> Any:
        done = subprocess.run(
            ["bash", "-c", f"set -eu\n{export}\n{block}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (block, done.stderr)
        return json.loads(done.stdout)

    def until(block: str, holds: Callable[[Any], bool], what: str) -> Any:
        """Run `block` again until its answer shows `what` (a tick has to come first)."""

        def answer() -> Any:
            found = run(block)
            return found if holds(found) else None

        return eventually(answer, what, server)

    steps = docs.code(PAGE, "sh")
    assert len(steps) == 13, steps  # a block added or lost: this test says what it does
    for block in steps:
        assert [line.split()[0] for line in block.splitlines()] == ["curl"], block
    (
        declare,
        ladder,
        capacity,
        submit,
        job,
        offers,
        buy,
        blocks_now,
        set_limit,
        declare_more,
        remove_limit,
        stats,
        account,
    ) = steps

    # 1. declare capacity as your VM tenant, and watch it granted
    declared = run(declare)
    assert (declared["cluster"], declared["max_gpus"], declared["pending_gpus"]) == (
        "you-ref-vm",
        32,
        32,
    )
    assert run(ladder)["island"] == "ref"
    held = until(capacity, lambda a: a["held_gpus"] == 32, "the 32 GPUs granted")
    assert len(held["nodes"]) == 4
    assert held["rate"] <= held["max_price_per_gpu_hour"] == 5

    # 2. submit a job on your Kubernetes tenant
    submitted = run(submit)
    assert (submitted["name"], submitted["nodes"], submitted["state"]) == (
        "first-job",
        2,
        "pending",
    )
    running = until(job, lambda a: a["state"] == "running", "the job running")
    assert "Provisioned" in [e["type"] for e in running["events"]]

    # 3. buy a base load block on ref: the grid, the purchase, the block taking a job's node
    grid = run(offers)
    assert (grid["island"], grid["buying_open"]) == ("ref", True)
    cell = next(c for c in grid["cells"] if (c["size_gpus"], c["term_hours"]) == (8, 24))
    assert (cell["state"], cell["rate_per_gpu_hour"], cell["price_usd"], cell["deposit_usd"]) == (
        "available",
        1.6,
        307.2,
        0,
    )
    block = run(buy)
    assert (block["cluster"], block["gpus"], block["state"], block["deposit_usd"]) == (
        "you-ref-k8s",
        8,
        "live",
        0,
    )
    assert run(blocks_now)["live"]["id"] == block["id"]
    until(
        job,
        lambda a: "FoldedIntoBlock" in [e["type"] for e in a["events"]],
        "a node of the job joining the block",
    )

    # 4. set a spend limit, and meet it
    limit = run(set_limit)
    assert limit["usd_per_day"] == 200
    refused = run(declare_more)
    assert (refused["error"], refused["usd_per_day"]) == ("spend-limit", 200)
    assert refused["worst_case_usd"] > refused["left_usd"]
    assert run(capacity)["max_gpus"] == 32  # the declaration stays (what is held may go back
    # at a window's end, once the limit no longer covers its next hour)
    assert run(remove_limit)["usd_per_day"] is None

    # 5. the dashboard's figures for ref; and then, the operator's side
    assert run(stats)["island"] == "ref"
    yours = run(account)
    assert (yours["name"], sorted(yours["clusters"])) == (
        "you",
        ["you-edge-k8s", "you-edge-vm", "you-ref-k8s", "you-ref-vm"],
    )
