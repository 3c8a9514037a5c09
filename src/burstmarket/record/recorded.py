"""What a backtest reads of the history (docs/history.md): the demand journal, the ticks, and
what one cluster held and paid, with Polars."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from burstmarket.clock import from_datetime

COVERED_VM = frozenset({("PUT", "/api/vm/capacity")})
"""The requests of a VM cluster a declaration stands for (a strategy's `VmBid`)."""
JOBS = "/api/k8s/jobs"


class NoHistory(Exception):
    """The directory holds no history a backtest can re-run: one line saying why."""


@dataclass(frozen=True, slots=True)
class Request:
    """One row of the demand journal."""

    seq: int
    time: int
    """Market time, ns."""
    cluster: str | None
    method: str
    path: str
    body: str

    @property
    def operator(self) -> bool:
        return self.path.startswith("/api/admin/")

    def declares(self) -> bool:
        """Whether it is one a strategy's declaration stands for: a VM cluster's capacity, a
        Kubernetes cluster's limit price and jobs."""
        if self.operator:
            return False
        k8s = self.path == "/api/k8s/bid" or self.path == JOBS or self.path.startswith(JOBS + "/")
        return (self.method, self.path) in COVERED_VM or k8s


@dataclass(frozen=True, slots=True)
class Record:
    requests: list[Request]
    """Every island's, once each, in the order the market took them."""
    ticks: list[tuple[int, str]]
    """(market ns, island) of every tick, by time."""
    tick_seconds: float


def read(root: Path) -> Record:
    if not (root / "ticks").is_dir() or not (root / "demand").is_dir():
        raise NoHistory(f"{root} holds no history with a demand journal (ticks/ and demand/)")
    demand = (
        scan(root, "demand")
        .select("seq", "time", "cluster", "method", "path", "body")
        .unique("seq")  # an account's requests are under every island
        .sort("seq")
        .collect()
    )
    ticks = scan(root, "ticks").select("island", "time", "tick_seconds").sort("time").collect()
    if ticks.is_empty():
        raise NoHistory(f"{root} holds no tick")
    seconds = ticks["tick_seconds"].unique().to_list()
    if len(seconds) != 1:
        raise NoHistory(f"{root} ticks at several intervals ({seconds}); a backtest needs one")
    requests = [
        Request(row["seq"], from_datetime(row["time"]), *_rest(row))
        for row in demand.iter_rows(named=True)
    ]
    ticked = [(from_datetime(t), island) for island, t, _ in ticks.iter_rows()]
    return Record(requests, ticked, float(seconds[0]))


def _rest(row: dict[str, object]) -> tuple[str | None, str, str, str]:
    cluster = row["cluster"]
    return (
        None if cluster is None else str(cluster),
        str(row["method"]),
        str(row["path"]),
        str(row["body"]),
    )


def scan(root: Path, table: str) -> pl.LazyFrame:
    """Every part of one history table, with its partitions as columns."""
    return pl.scan_parquet(root / table / "**" / "*.parquet", hive_partitioning=True)


def cluster_ticks(root: Path, island: str, cluster: str, gpus_per_node: int) -> pl.DataFrame:
    """Per tick of `island`: what `cluster` held after it (every node, GPUs), what it held in
    the market, its rate and what the tick billed it (0 where it held no market node), and
    the GPUs it asked for and did not hold, with why (null in a history without `pending`)."""
    ticks = scan(root, "ticks").filter(pl.col("island") == island).select("tick", "time")
    rates = (
        scan(root, "cluster_rates")
        .filter((pl.col("island") == island) & (pl.col("cluster") == cluster))
        .select("tick", pl.col("gpus").alias("market_gpus"), "rate", "amount_usd")
    )
    held = (
        scan(root, "allocations")
        .filter((pl.col("island") == island) & (pl.col("cluster") == cluster))
        .group_by("tick")
        .agg((pl.len() * gpus_per_node).cast(pl.Int64).alias("held_gpus"))
    )
    joined = (
        ticks.join(held, on="tick", how="left")
        .join(rates, on="tick", how="left")
        .with_columns(
            pl.col("held_gpus").fill_null(0),
            pl.col("market_gpus").fill_null(0).cast(pl.Int64),
            pl.col("amount_usd").fill_null(0),
        )
    )
    if (root / "pending").is_dir():
        pending = (
            scan(root, "pending")
            .filter((pl.col("island") == island) & (pl.col("cluster") == cluster))
            .select("tick", pl.col("gpus").cast(pl.Int64).alias("pending_gpus"), "pending_reason")
        )
        joined = joined.join(pending, on="tick", how="left").with_columns(
            pl.col("pending_gpus").fill_null(0)
        )
    else:  # a history from before the pending table: not in the record
        joined = joined.with_columns(
            pl.lit(None, pl.Int64).alias("pending_gpus"),
            pl.lit(None, pl.String).alias("pending_reason"),
        )
    return joined.sort("tick").collect()
