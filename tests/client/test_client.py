"""burstmarket.client against a real server: typed answers with Decimal prices, the synchronous
twin, refusals and failures as the client's own errors, ladder-aware bidding that counts the
nodes a cluster holds; and the client's types checked by `mypy --strict` on code that uses them."""

from __future__ import annotations

import asyncio
import http.server
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

import pytest

from burstmarket.client import (
    Job,
    OperatorClient,
    Refused,
    ServerError,
    SyncOperatorClient,
    SyncTenantClient,
    TenantClient,
    Unreachable,
)
from tests import docs
from tests.client import typed_usage
from tests.conftest import Server, StartServer, free_port

T = TypeVar("T")
TYPED_USAGE = Path(typed_usage.__file__)


def arun(make: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(make())  # type: ignore[arg-type]


async def new_cluster(op: OperatorClient, island: str, kind: str, name: str) -> TenantClient:
    created = await op.create_cluster("acct", island, kind, name)
    return TenantClient(op.base_url, created.token)


def test_declare_read_and_refusals_with_exact_prices(server: Server) -> None:
    async def scenario() -> None:
        async with OperatorClient(server.url, server.token) as op:
            island = await op.put_island("small", gpus_per_node=8, nodes=4, reserve_price="1.5")
            assert island.reserve_price == Decimal("1.5")
            account = await op.create_account("acct", 1000)
            assert account.balance_usd == Decimal(1000)
            async with await new_cluster(op, "small", "vm", "vm-a") as me:
                with pytest.raises(Refused) as off_grid:
                    await me.declare(12, Decimal("2.0"))
                assert off_grid.value.status == 422
                assert off_grid.value.code == "off-grid"
                assert off_grid.value.figures["gpus_per_node"] == 8
                with pytest.raises(Refused) as too_low:
                    await me.declare(16, Decimal("1.25"))
                assert too_low.value.code == "bid-too-low"
                declared = await me.declare(16, 2.2)  # a float is read by its shortest repr
                assert (declared.max_gpus, declared.pending_gpus) == (16, 16)
                assert declared.max_price_per_gpu_hour == Decimal("2.2")
                report = await op.ticks(1)
                assert [s.island for s in report.islands] == ["ref", "small"]
                capacity = await me.capacity()
                assert capacity.held_gpus == 16
                assert capacity.rate == Decimal("1.5")  # uncontested: the reserve
                assert capacity.nodes[0].window_ends_at == report.time + timedelta(hours=1)
                first = capacity.nodes[0].id
                shrunk = await me.declare(8, Decimal("2.2"), release=[first])
                assert shrunk.held_gpus == 8
                assert first not in {n.id for n in shrunk.nodes}

    arun(scenario)


def test_declare_to_win_bids_for_the_nodes_the_cluster_does_not_hold_yet(
    start_server: StartServer,
) -> None:
    # 30-minute ticks: the 1-hour windows of the first grants end two ticks later
    server = start_server("--clock", "manual", "--tick-seconds", "1800")
    with SyncOperatorClient(server.url, server.token) as op:
        op.put_island("dw", gpus_per_node=8, nodes=4, reserve_price=1)
        op.create_account("acct", 10_000)
        me = op.create_cluster("acct", "dw", "vm", "me").token
        rival = op.create_cluster("acct", "dw", "vm", "rival").token
        for token, price in ((me, Decimal(2)), (rival, Decimal("1.5"))):
            with SyncTenantClient(server.url, token) as tenant:
                tenant.declare(16, price)
        typed_usage.run_ticks(server.url, server.token, 3, "dw")  # the windows have ended
        ladder = typed_usage.rungs(server.url, me, "dw")
        # one more node displaces the rival's 1.5 (the tie going to the older bid); three
        # nodes, as a newcomer would ask, would also displace my own 2.0 twice
        assert [(n, price) for n, price, *_ in ladder] == [
            (1, Decimal("1.5001")),
            (2, Decimal("1.5001")),
            (3, Decimal("1.6667")),
            (4, Decimal("1.7501")),
        ]
        declared = typed_usage.one_more_node(server.url, me, ceiling=Decimal(3))
        assert declared.max_gpus == 24
        assert declared.max_price_per_gpu_hour == Decimal("1.6501")  # 1.5001 + 10 %
        typed_usage.run_ticks(server.url, server.token, 1, "dw")
        with SyncTenantClient(server.url, me) as mine:
            assert mine.capacity().held_gpus == 24
        # holding 3 of the 4 nodes, the last one takes beating the rival's own 1.5 again
        declared = arun(lambda: typed_usage.one_more_node_async(server.url, me, Decimal("1.6")))
        assert (declared.max_gpus, declared.max_price_per_gpu_hour) == (32, Decimal("1.6"))


def test_the_ladder_says_when_and_why_a_rung_cannot_be_won_now(start_server: StartServer) -> None:
    # 20-minute ticks: the 1-hour windows still hold the nodes at the tick after the next
    server = start_server("--clock", "manual", "--tick-seconds", "1200")
    with SyncOperatorClient(server.url, server.token) as op:
        op.put_island("win", gpus_per_node=8, nodes=2, reserve_price=1)
        op.create_account("acct", 10_000)
        holder = op.create_cluster("acct", "win", "vm", "holder").token
        with SyncTenantClient(server.url, holder) as me:
            me.declare(16, 2)
        granted, _ = typed_usage.run_ticks(server.url, server.token, 2, "win")
    ladder = typed_usage.rungs(server.url, holder, "win")
    # both nodes under the holder's windows, granted a tick ago: contestable when they end
    ends = granted.time - timedelta(minutes=20) + timedelta(hours=1)
    assert [(n, price, when) for n, price, when, _ in ladder] == [
        (1, Decimal("2.0001"), ends),
        (2, Decimal("2.0001"), ends),
    ]
    assert {why for *_, why in ladder} == {"windows-hold"}
    assert arun(lambda: typed_usage.vwap(server.url, server.token, "win")) == Decimal(1)


def docs_example(page: str = "docs/client.md", section: str | None = None) -> str:
    """The one Python example on `page` (under `section` if given), as tests/docs.py reads it."""
    (example,) = docs.code(page, "python", section)
    return example


def test_the_client_page_example_bids_the_ladder_and_says_when(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    with SyncOperatorClient(server.url, server.token) as op:
        op.create_account("acct", 100_000)
        holder = op.create_cluster("acct", "ref", "vm", "holder").token
        with SyncTenantClient(server.url, holder) as tenant:
            tenant.declare(64 * 8, 2)  # the whole reference island, under 1-hour windows
        op.ticks(2)
        me = op.create_cluster("acct", "ref", "vm", "me").token
    code = docs_example().replace("http://127.0.0.1:8000", server.url)
    exec(code.replace("<cluster token>", me), {})
    when = capsys.readouterr().out.strip()
    assert when.startswith("windows-hold: ")
    assert when.endswith(" UTC")
    with SyncTenantClient(server.url, me) as mine:
        declared = mine.capacity()
    # to win 4 nodes once the windows end it must outbid the holder's 2.0: 2.0001 + 10 %
    assert (declared.max_gpus, declared.max_price_per_gpu_hour) == (32, Decimal("2.2001"))


def test_the_readme_example_reads_the_price_and_the_ladder(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    with SyncOperatorClient(server.url, server.token) as op:
        op.create_account("acct", 100_000)
        holder = op.create_cluster("acct", "ref", "vm", "holder").token
        with SyncTenantClient(server.url, holder) as tenant:
            tenant.declare(4 * 8, 2)
        op.ticks(1)
        me = op.create_cluster("acct", "ref", "vm", "me").token
    (example,) = docs.code("README.md", "python", "## Try it from a program")
    exec(example.replace("http://127.0.0.1:8000", server.url).replace("<cluster token>", me), {})
    # 4 nodes held at 2.0 on the 64-node island: 60 free, so the holder pays the reserve and 4
    # more nodes cost a newcomer the reserve too
    assert capsys.readouterr().out.strip() == "vwap 1.0, to win 4 nodes: 1.0 USD/GPU-hour"


def test_kubernetes_jobs_run_and_finish(server: Server) -> None:
    async def scenario() -> None:
        async with OperatorClient(server.url, server.token) as op:
            await op.create_account("acct", 1000)
            async with await new_cluster(op, "ref", "k8s", "kube") as me:
                assert (await me.set_bid(2.5)).limit_price_per_gpu_hour == Decimal("2.5")
                job = await me.submit_job("train-1", 2, priority_class="batch")
                assert job.state == "pending"
                await op.ticks(1)
                running: Job = await me.job("train-1")
                assert running.state == "running"
                assert isinstance(running.provisioned_at, datetime)
                assert len(running.node_ids) == 2
                assert "Provisioned" in {e.type for e in running.events}
                finished = await me.finish_job("train-1")
                assert finished.state == "finished"
                assert [j.name for j in await me.jobs()] == ["train-1"]
                limit = await me.set_spend_limit(100)
                assert limit.usd_per_day == Decimal(100)
                billed = await me.billing(granularity="1d")
                assert billed[0].kind == "market"
                assert billed[0].amount_usd > 0
                mine = await me.account()
                assert (mine.account, mine.billing_hold_since) == ("acct", None)
                assert mine.balance_usd == (await op.account("acct")).balance_usd
                assert mine.balance_usd == 1000 - sum(row.amount_usd for row in billed)
                assert (mine.spent_24h_usd, mine.committed_usd) == (
                    limit.spent_usd,
                    limit.committed_usd,
                )
                assert limit.over_by_usd == 0

    arun(scenario)


@pytest.fixture
def failing_server() -> Iterator[str]:
    """A real HTTP server that answers everything with a 500, as a broken one would."""

    class Broken(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Broken)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.e2e
def test_failures_are_the_clients_own_errors(failing_server: str) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with SyncTenantClient(nobody, "t") as me, pytest.raises(Unreachable) as down:
        me.capacity()
    assert "/api/vm/capacity" in str(down.value)

    async def unreachable() -> None:
        async with TenantClient(nobody, "t") as me:
            await me.stats("ref")

    with pytest.raises(Unreachable):
        arun(unreachable)
    with SyncTenantClient(failing_server, "t") as me, pytest.raises(ServerError) as broken:
        me.ladder("ref")
    assert "HTTP 500" in str(broken.value)


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=Path(__file__).parents[2],
    )


def test_the_client_types_pass_mypy_strict_in_code_that_uses_them(tmp_path: Path) -> None:
    checked = mypy(TYPED_USAGE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # and they are real types, not Any: misuse is caught
    misuse = tmp_path / "misuse.py"
    misuse.write_text(
        "from burstmarket.client import SyncTenantClient, TenantClient\n"
        "\n"
        "\n"
        "def f(me: SyncTenantClient, them: TenantClient) -> None:\n"
        "    price: float = me.ladder('ref').rungs[0].price_per_gpu_hour\n"
        "    print(price, them.capacity().held_gpus)\n"
    )
    caught = mypy(misuse).stdout
    assert 'expression has type "Decimal", variable has type "float"' in caught, caught
    assert 'has no attribute "held_gpus"' in caught, caught  # a coroutine, not awaited


@pytest.mark.e2e
def test_the_base_load_example_buys_a_block_and_packs_a_small_job_on_it(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/service.md's base load flow as written (read the offers, buy, submit a job smaller
    than a node, read the block), then the operator's side through the client: a change of rate, a
    wire, the account team's direct block."""
    with SyncOperatorClient(server.url, server.token) as op:
        # under the month's 17,280 USD: a deposit of 10,000 USD, the rest owed by wire
        op.create_account("acct", 12_000)
        me = op.create_cluster("acct", "ref", "k8s", "kube").token
        grid = op.post_offers(
            "ref", [(16, 720, "1.5"), (8, 24, None)], buying_open=True, reservable_nodes=4
        )
        assert [(c.size_gpus, c.state, c.deposit_usd) for c in grid.cells] == [
            (8, "sold-out", None),
            (16, "available", None),
        ]
        assert op.set_packing("kube", True).enabled
        exec(
            docs_example("docs/service.md", "## Base load")
            .replace("http://127.0.0.1:8000", server.url)
            .replace("<cluster token>", me),
            {},
        )
        printed = capsys.readouterr().out.splitlines()
        assert printed[:2] == ["8 24 None sold-out None", "16 720 1.5 available None"]
        bought = "kube-bl1: 17280.0 USD, deposit 10000.0 USD, 7280.0 USD by wire by "
        assert printed[2].startswith(bought)
        op.ticks(1)
        with SyncTenantClient(server.url, me) as tenant:
            job = tenant.job("eval-1")
            assert (job.state, job.pods, job.gpus_per_pod, len(job.node_ids)) == (
                "running",
                2,
                2,
                1,
            )
            block = tenant.base_load().live
            assert block is not None
            assert (block.id, block.gpus, block.deposit_held_usd, block.owed_usd) == (
                "kube-bl1",
                16,
                Decimal(10_000),
                Decimal(7280),
            )
            assert tenant.base_load_offers().live_block == "kube-bl1"
        account = op.wire("acct", 7280)  # paid in full: the deposit comes back
        assert (account.owed_usd, account.receivables) == (Decimal(0), [])
        # paid in, 12,000 + 7,280 USD, less the block's first 5-minute step: 16 x 1.5 x 5 min
        assert account.balance_usd == 12_000 + 7280 - 2
        changed = op.change_block("kube-bl1", rate_per_gpu_hour="1.25", notes="renegotiated")
        assert (changed.id, changed.purchase, changed.rate_per_gpu_hour, changed.notes) == (
            "kube-bl2",
            "kube-bl1",
            Decimal("1.25"),
            "renegotiated",
        )
        other = op.create_cluster("acct", "ref", "k8s", "other")
        assert other.id == "other"
        direct = op.create_block("other", 1, "0.5", 2)
        assert (direct.origin, direct.nodes, direct.rate_per_gpu_hour) == (
            "account-team",
            1,
            Decimal("0.5"),
        )
