"""`burstmarket backtest`: a recorded period re-run tick by tick, everyone's recorded demand
placed again and a strategy's declarations in one cluster's place, or as a newcomer
(docs/analysts.md "Backtests").

The whole tick runs, with the code the service runs: the service's own app on the manual clock
and a store of its own in a temporary data dir, as `burstmarket simulate` runs it. Every request
of the demand journal goes through the same HTTP handlers (in-process, `httpx.ASGITransport`)
at its market time, in its recorded order; every recorded tick runs at its recorded time.
The strategy is asked after each tick of its island in the period; what its declaration asks
(the difference from what it declared before) takes the places in the order where the cluster
asked something in the record, the rest after every recorded request of that time. The
cluster's other requests (its spend limit, its base load purchases) stand as recorded.

At the end the backtest's store is exported to Parquet by the service's history exporter, so
what the strategy held and paid is read exactly as the record's own history is read.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import msgspec
import polars as pl

from burstmarket.api.app import create_app
from burstmarket.clock import NS_PER_S, from_datetime, to_datetime
from burstmarket.contract import ClusterTickView
from burstmarket.events import TickCommitted
from burstmarket.market.market import Market
from burstmarket.money import MICRO_USD
from burstmarket.record import recorded
from burstmarket.record.recorded import NoHistory, Record, Request
from burstmarket.record.strategy import (
    Bid,
    JobBid,
    K8sBid,
    Own,
    Strategy,
    StrategyError,
    Tick,
    VmBid,
)
from burstmarket.settings import Settings
from burstmarket.simulation.history import export_history
from burstmarket.states import Kind

BASE_URL = "http://backtest"
"""Only a name: requests never leave the process."""
NEWCOMER_ACCOUNT = "backtest"
OPENING_BALANCE_USD = Decimal(1_000_000)
_ENCODE = msgspec.json.Encoder(decimal_format="number").encode


class BacktestError(Exception):
    """What a backtest cannot do (an unknown cluster, a period with no tick): one line."""


@dataclass(frozen=True, slots=True)
class Options:
    history: Path
    strategy: Strategy
    cluster: str | None = None
    """The recorded cluster whose place the strategy takes; None: `newcomer`."""
    newcomer: Kind | None = None
    """The kind of a new cluster the strategy is (made at the period's start)."""
    island: str | None = None
    """The newcomer's island (needed when the record has several)."""
    start: datetime | None = None
    end: datetime | None = None
    balance_usd: Decimal = OPENING_BALANCE_USD
    """The newcomer's account's opening balance."""
    keep: Path | None = None
    """A data dir to keep the backtest's own store and history in (default: a temporary one)."""


@dataclass(frozen=True, slots=True)
class Figures:
    """What a cluster held, waited and paid over the period."""

    held_gpu_hours: Decimal
    """Every node it held after each tick (market and base load), GPUs × tick_seconds."""
    pending_hours: Decimal | None
    """Market time in ticks after which GPUs it asked for waited (None: not in the record)."""
    spend_usd: Decimal
    """What the ticks billed it for market nodes (cluster_rates.amount_usd)."""
    mean_rate: Decimal | None
    """spend_usd per market GPU-hour (None: it held no market node)."""


@dataclass(frozen=True, slots=True)
class Result:
    cluster: str
    island: str
    ticks: pl.DataFrame
    """One row per tick of the island in the period (docs/analysts.md "Output")."""
    strategy: Figures
    recorded: Figures | None
    """The recorded cluster's (None for a newcomer)."""
    others_refused: int
    """Recorded requests of other clusters the backtest's market refused (their demand changed
    from the record's because the strategy's did)."""
    history: Path | None
    """The backtest's own history (with `keep`)."""


@dataclass(slots=True)
class _Seat:
    """The strategy's cluster in the backtest's market."""

    cluster: str
    island: str
    kind: Kind
    gpus_per_node: int = 0
    bid: Bid | None = None
    made: bool = False
    """A newcomer made in the backtest's market."""
    acting: bool = False
    """Whether it has taken the cluster's place (from the first tick it is asked at)."""
    planned: list[tuple[str, str, str]] = field(default_factory=list)
    """The requests of its last declaration not sent yet: (method, path, body)."""
    refused: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def backtest(options: Options, on_tick: Callable[[int, int], None] | None = None) -> Result:
    """Run the backtest (blocking). `on_tick(done, total)` follows its recorded ticks."""
    if (options.cluster is None) == (options.newcomer is None):
        raise BacktestError("name either a cluster (--cluster) or a newcomer's kind")
    record = recorded.read(options.history)
    with _data_dir(options.keep) as data_dir:
        return asyncio.run(_Run(options, record, data_dir, on_tick).run())


@contextmanager
def _data_dir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        if keep.exists() and any(keep.iterdir()):
            raise BacktestError(f"{keep} is not empty: a backtest keeps its data in a new dir")
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="burstmarket-backtest-") as temp:
        yield Path(temp)


class _Run:
    def __init__(
        self,
        options: Options,
        record: Record,
        data_dir: Path,
        on_tick: Callable[[int, int], None] | None,
    ) -> None:
        self.options = options
        self.record = record
        self.data_dir = data_dir
        self.on_tick = on_tick
        self.start = None if options.start is None else from_datetime(options.start)
        self.end = None if options.end is None else from_datetime(options.end)
        self.interval = round(record.tick_seconds * NS_PER_S)
        self.seat = self._seat()
        self.operator_token = secrets.token_urlsafe(24)
        self.tokens: dict[str, str] = {}
        self.others_refused = 0
        self.islands: list[str] | None = None
        """The market's islands in its ticking order (read again after an island request)."""

    def _seat(self) -> _Seat:
        made = {}
        for request in self.record.requests:
            if request.operator and request.method == "POST" and request.path.endswith("/clusters"):
                body = msgspec.json.decode(request.body)
                made[body["name"]] = body
        options = self.options
        if options.cluster is not None:
            found = made.get(options.cluster)
            if found is None:
                raise BacktestError(f"no cluster {options.cluster} in the record")
            return _Seat(options.cluster, found["island"], found["kind"])
        assert options.newcomer is not None
        islands = sorted({island for _, island in self.record.ticks})
        island = options.island
        if island is None:
            if len(islands) != 1:
                raise BacktestError(f"name the newcomer's island: one of {', '.join(islands)}")
            island = islands[0]
        if island not in islands:
            raise BacktestError(f"no island {island} in the record ({', '.join(islands)})")
        name = f"{NEWCOMER_ACCOUNT}-{island}-{options.newcomer}"
        if name in made:
            raise BacktestError(f"the record has a cluster {name} already")
        return _Seat(name, island, options.newcomer)

    def in_period(self, time: int) -> bool:
        return (self.start is None or time >= self.start) and (self.end is None or time < self.end)

    async def run(self) -> Result:
        requests, ticks = self.record.requests, self.record.ticks
        first = min(requests[0].time if requests else ticks[0][0], ticks[0][0])
        settings = Settings(
            clock="manual",
            data_dir=self.data_dir,
            tick_seconds=self.record.tick_seconds,
            operator_token=self.operator_token,
            clock_start=to_datetime(first),
            history_live=False,
            first_island=None,  # the record's first island is its journal's first request
            rate_per_second=0,  # no limit: the record's requests were taken once already
        )
        app = create_app(settings)
        market: Market = app.state.market
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        times = sorted({time for time, _ in ticks})
        by_time: dict[int, set[str]] = {}
        for time, island in ticks:
            by_time.setdefault(time, set()).add(island)
        last = times[-1] if self.end is None else max(t for t in times if t < self.end)
        client = httpx.AsyncClient(transport=transport, base_url=BASE_URL, timeout=300)
        failed: Exception | None = None
        async with app.lifespan(), client as http:
            self.http = http
            try:
                await self._periods(market, times, by_time, last)
            except (StrategyError, BacktestError) as exc:
                failed = exc  # raised once the app has stopped, not through its task group
        if failed is not None:
            raise failed
        export_history(settings, through=to_datetime(last + self.interval))
        return self._result()

    async def _periods(
        self, market: Market, times: list[int], by_time: dict[int, set[str]], last: int
    ) -> None:
        """Every recorded tick up to `last`, each after the requests the market took since
        the one before."""
        requests = self.record.requests
        next_request = 0
        for done, time in enumerate(times, 1):
            if time > last:
                break
            # what the market took since the last tick, the strategy's in its places
            before = next_request
            while next_request < len(requests) and requests[next_request].time < time:
                next_request += 1
            await self._place(requests[before:next_request])
            if self.options.newcomer and not self.seat.made and self.in_period(time):
                await self._make_newcomer()
            for island in await self._ticking(market, by_time[time]):
                event = market.tick(island, time)
                if island == self.seat.island and self.in_period(time):
                    await self._ask(event)
            if self.on_tick is not None:
                self.on_tick(done, len(times))
        await self._place([])  # what the last declaration asked

    async def _ticking(self, market: Market, recorded_here: set[str]) -> list[str]:
        if self.islands is None:
            self.islands = market.island_ids()
        return [island for island in self.islands if island in recorded_here]

    async def _place(self, requests: list[Request]) -> None:
        """The recorded requests of one interval in their order, the strategy's declaration
        in the places of the cluster's own, then what it asks beyond them."""
        seat = self.seat
        for request in requests:
            if seat.acting and request.cluster == seat.cluster and request.declares():
                if seat.planned:
                    await self._send_own(*seat.planned.pop(0))
                continue
            answer = await self._send(request.method, request.path, request.body, request)
            if answer.status_code >= 400 and request.cluster != seat.cluster:
                self.others_refused += 1
        while seat.planned:
            await self._send_own(*seat.planned.pop(0))

    async def _send(
        self, method: str, path: str, body: str, request: Request | None = None
    ) -> httpx.Response:
        operator = path.startswith("/api/admin/")
        if operator:
            token = self.operator_token
        else:
            cluster = self.seat.cluster if request is None else request.cluster
            token = self.tokens.get(cluster or "", "")
        headers = {"authorization": f"Bearer {token}"}
        if body:
            headers["content-type"] = "application/json"
        answer = await self.http.request(method, path, content=body.encode(), headers=headers)
        if answer.status_code >= 500:
            raise BacktestError(f"the market failed on {method} {path}: {answer.text}")
        if operator and answer.status_code < 400:
            if path == "/api/admin/clusters":
                made = answer.json()
                self.tokens[made["id"]] = made["token"]
            elif path.startswith("/api/admin/islands/") and method == "PUT":
                self.islands = None
        return answer

    async def _send_own(self, method: str, path: str, body: str) -> None:
        answer = await self._send(method, path, body)
        if answer.status_code >= 400:
            self.seat.refused.append(str(answer.json().get("error", answer.status_code)))

    async def _make_newcomer(self) -> None:
        seat, options = self.seat, self.options
        seat.made = True
        account = {"name": seat.cluster, "balance_usd": options.balance_usd}
        await self._checked("POST", "/api/admin/accounts", _ENCODE(account).decode())
        body = {"account": seat.cluster, "island": seat.island, "kind": seat.kind}
        body["name"] = seat.cluster
        await self._checked("POST", "/api/admin/clusters", _ENCODE(body).decode())

    async def _checked(self, method: str, path: str, body: str = "") -> Any:
        answer = await self._send(method, path, body)
        if answer.status_code >= 400:
            raise BacktestError(f"{method} {path} refused: {answer.text}")
        return answer.json()

    async def _ask(self, event: TickCommitted) -> None:
        """Ask the strategy after its island's tick; plan what its declaration asks."""
        seat = self.seat
        row = next((c for c in event.clusters if c.cluster == seat.cluster), None)
        if row is None:
            return  # the cluster is not made yet
        if not seat.acting:
            await self._take_seat()
        refused, seat.refused = tuple(seat.refused), []
        own = _own(seat, row, refused)
        tick = Tick(event.island, event.tick, event.time, event.stats, event.ladder)
        try:
            bid = self.options.strategy(tick, own)
        except Exception as exc:
            raise StrategyError(
                f"the strategy raised at tick {event.tick} ({event.time.isoformat()}): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if bid is not None:
            seat.planned = self._asks(bid)
            seat.bid = bid
        seat.rows.append({"tick": event.tick, "refused": ",".join(refused) or None})

    async def _take_seat(self) -> None:
        """The cluster's declaration as the market holds it when the strategy takes over."""
        seat = self.seat
        seat.acting = True
        seat.gpus_per_node = (await self._checked("GET", "/api/cluster"))["gpus_per_node"]
        if seat.kind == "vm":
            capacity = await self._checked("GET", "/api/vm/capacity")
            seat.bid = VmBid(
                capacity["max_gpus"] // seat.gpus_per_node,
                _decimal(capacity["max_price_per_gpu_hour"]),
            )
            return
        limit = (await self._checked("GET", "/api/k8s/bid"))["limit_price_per_gpu_hour"]
        jobs = [
            JobBid(
                job["name"],
                None if job["pods"] is not None else job["nodes"],
                job["pods"],
                job["gpus_per_pod"],
                _decimal(job["limit_price_per_gpu_hour"]),
                job["priority_class"],
            )
            for job in await self._checked("GET", "/api/k8s/jobs")
            if job["state"] != "finished"
        ]
        seat.bid = K8sBid(_decimal(limit), tuple(jobs))

    def _asks(self, bid: Bid) -> list[tuple[str, str, str]]:
        """The requests that take the cluster from its standing declaration to `bid`."""
        seat = self.seat
        if seat.kind == "vm":
            if not isinstance(bid, VmBid):
                raise StrategyError(f"a VM cluster's strategy answered {type(bid).__name__}")
            body: dict[str, Any] = {
                "max_gpus": bid.nodes * seat.gpus_per_node,
                "max_price_per_gpu_hour": bid.price,
            }
            if bid.release:
                body["release"] = list(bid.release)
            return [("PUT", "/api/vm/capacity", _ENCODE(body).decode())]
        if not isinstance(bid, K8sBid):
            raise StrategyError(f"a Kubernetes cluster's strategy answered {type(bid).__name__}")
        was = seat.bid if isinstance(seat.bid, K8sBid) else K8sBid(None)
        before = {job.name: job for job in was.jobs}
        wanted = {job.name: job for job in bid.jobs}
        asks = []
        if bid.limit_price != was.limit_price and bid.limit_price is not None:
            price = _ENCODE({"limit_price_per_gpu_hour": bid.limit_price}).decode()
            asks.append(("PUT", "/api/k8s/bid", price))
        asks += [("DELETE", f"/api/k8s/jobs/{name}", "") for name in before if name not in wanted]
        for name, job in wanted.items():
            old = before.get(name)
            if old is None:
                asks.append(("POST", "/api/k8s/jobs", _ENCODE(_new_job(job)).decode()))
            elif (old.price, old.priority_class) != (job.price, job.priority_class):
                change = {
                    "limit_price_per_gpu_hour": job.price,
                    "priority_class": job.priority_class,
                }
                asks.append(("PATCH", f"/api/k8s/jobs/{name}", _ENCODE(change).decode()))
        # new jobs after the changes, in the order the strategy listed them
        return sorted(asks, key=lambda ask: ask[0] == "POST")

    def _result(self) -> Result:
        seat, options = self.seat, self.options
        gpn = seat.gpus_per_node
        if not seat.acting:
            raise BacktestError(
                f"the strategy was never asked: {seat.cluster} has no tick on {seat.island} "
                "in the period"
            )
        own = recorded.cluster_ticks(self.data_dir / "history", seat.island, seat.cluster, gpn)
        asked = pl.DataFrame(
            seat.rows,
            schema={"tick": pl.Int64, "refused": pl.String},
        )
        ticks = own.join(asked, on="tick", how="inner")
        was = None
        if options.cluster is not None:
            before = recorded.cluster_ticks(options.history, seat.island, seat.cluster, gpn)
            renamed = before.select(
                "tick", *(pl.col(c).alias(f"recorded_{c}") for c in before.columns[2:])
            )
            ticks = ticks.join(renamed, on="tick", how="left")
            was = _figures(ticks, "recorded_", self.record.tick_seconds)
        return Result(
            seat.cluster,
            seat.island,
            ticks.sort("tick"),
            _figures(ticks, "", self.record.tick_seconds),
            was,
            self.others_refused,
            None if options.keep is None else self.data_dir / "history",
        )


def _own(seat: _Seat, row: ClusterTickView, refused: tuple[str, ...]) -> Own:
    return Own(
        seat.cluster,
        seat.kind,
        seat.gpus_per_node,
        row.held_nodes,
        row.held_gpus,
        tuple(row.node_ids),
        row.base_load_nodes,
        row.pending_gpus,
        row.pending_reason,
        tuple(row.pending_jobs),
        row.rate,
        row.receipt,
        seat.bid,
        refused,
    )


def _new_job(job: JobBid) -> dict[str, Any]:
    body: dict[str, Any] = {"name": job.name}
    for key, value in (
        ("nodes", job.nodes),
        ("pods", job.pods),
        ("gpus_per_pod", job.gpus_per_pod),
        ("limit_price_per_gpu_hour", job.price),
        ("priority_class", job.priority_class),
    ):
        if value is not None:
            body[key] = value
    return body


def _decimal(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _figures(ticks: pl.DataFrame, prefix: str, tick_seconds: float) -> Figures:
    seconds = Decimal(str(tick_seconds))

    def hours(count: int) -> Decimal:
        # one division last: a tick of 10 s is a recurring fraction of an hour, rounded once
        return count * seconds / 3600

    held = hours(int(ticks[f"{prefix}held_gpus"].sum()))
    market = hours(int(ticks[f"{prefix}market_gpus"].sum()))
    spend = sum(ticks[f"{prefix}amount_usd"].to_list(), Decimal(0))
    pending = None
    if ticks[f"{prefix}pending_gpus"].null_count() < ticks.height:  # null: not in the record
        pending = hours(ticks.filter(pl.col(f"{prefix}pending_gpus") > 0).height)
    mean = None if market == 0 else (spend / market).quantize(MICRO_USD)
    return Figures(held, pending, spend, mean)


__all__ = [
    "BacktestError",
    "Figures",
    "NoHistory",
    "Options",
    "Result",
    "StrategyError",
    "backtest",
]


def report(result: Result, out: Path) -> str:
    """What `burstmarket backtest` prints: the strategy's figures beside the record's."""
    ticks = result.ticks
    span = "no tick"
    if ticks.height:
        times = ticks["time"].to_list()
        span = f"{times[0]:%Y-%m-%dT%H:%M:%SZ} .. {times[-1]:%Y-%m-%dT%H:%M:%SZ}"
    was = result.recorded
    head = "record" if was is not None else "(a newcomer: no record)"
    lines = [
        f"backtest of {result.cluster} on {result.island}: {ticks.height} ticks, {span}",
        f"{'':24}{'strategy':>16}  {head}",
    ]
    for label, name in (
        ("held GPU-hours", "held_gpu_hours"),
        ("pending hours", "pending_hours"),
        ("spend USD", "spend_usd"),
        ("mean rate USD/GPU-hour", "mean_rate"),
    ):
        mine = _shown(getattr(result.strategy, name))
        theirs = "" if was is None else _shown(getattr(was, name), "not in the record")
        lines.append(f"{label:24}{mine:>16}  {theirs}")
    if result.others_refused:
        lines.append(
            f"{result.others_refused} recorded requests of other clusters were refused "
            "(the market they met had changed)"
        )
    lines.append(f"per tick: {out}")
    return "\n".join(lines)


def _shown(value: Decimal | None, missing: str = "-") -> str:
    """To the µUSD for spend and rates, and to as many places for GPU-hours and hours (an hour
    of 10-second ticks is a recurring decimal; `Figures` keeps it as computed)."""
    return missing if value is None else f"{value.quantize(MICRO_USD):,f}"
