"""Explicit Arrow schemas of the rows a tick writes (non-nullable where that is true)."""

from __future__ import annotations

import pyarrow as pa

USD = pa.decimal128(18, 6)
UNITS = pa.decimal128(38, 0)  # ledger units, cast to HUGEINT on insert
TIME = pa.timestamp("us", tz="UTC")
SECONDS = pa.decimal128(12, 3)  # a duration of market time, exact to the ms


def _f(name: str, kind: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


NODES = pa.schema(
    [
        _f("island", pa.string()),
        _f("id", pa.string()),
        _f("idx", pa.int32()),
        _f("cluster", pa.string(), True),
        _f("job", pa.string(), True),
        _f("granted_at", pa.int64(), True),
        _f("window_ends_at", pa.int64(), True),
        _f("hold_until", pa.int64(), True),
        _f("idle_since", pa.int64(), True),
        _f("locked_price", pa.int64(), True),
        _f("commit_price", pa.int64(), True),
        _f("commit_ends_at", pa.int64(), True),
        _f("service", pa.string(), True),
        _f("owed_until", pa.int64(), True),
        _f("block", pa.string(), True),
        _f("billed_until", pa.int64(), True),
    ]
)

JOBS = pa.schema(
    [
        _f("cluster", pa.string()),
        _f("name", pa.string()),
        _f("state", pa.string()),
        _f("provisioned_at", pa.int64(), True),
        _f("gang_price", pa.int64(), True),
        _f("bid_too_low", pa.bool_()),
    ]
)

JOB_EVENTS = pa.schema(
    [
        _f("cluster", pa.string()),
        _f("job", pa.string()),
        _f("ts", pa.int64()),
        _f("type", pa.string()),
        _f("detail", pa.string()),
    ]
)

TRANCHE = pa.struct([_f("nodes", pa.int32()), _f("since", pa.int64()), _f("seq", pa.int64())])

DEMAND = pa.schema(
    [
        _f("id", pa.string()),
        _f("max_gpus", pa.int32()),
        _f("max_price", pa.int64(), True),
        _f("demand", pa.list_(_f("item", TRANCHE))),
    ]
)

CLUSTER_STATE = pa.schema(
    [
        _f("id", pa.string()),
        _f("spend_window_start", pa.int64(), True),
        _f("pending_reason", pa.string(), True),
        _f("bid_too_low", pa.bool_()),
    ]
)

LEDGER = pa.schema(
    [
        _f("ts", pa.int64()),
        _f("account", pa.string()),
        _f("cluster", pa.string(), True),
        _f("island", pa.string(), True),
        _f("tick", pa.int64(), True),
        _f("kind", pa.string()),
        _f("node", pa.string(), True),
        _f("period_start", pa.int64(), True),
        _f("period_end", pa.int64(), True),
        _f("gpus", pa.int32()),
        _f("gpu_ms", pa.int64()),
        _f("rate", pa.int64(), True),
        _f("units", UNITS),
    ]
)

TICKS = pa.schema(
    [
        _f("island", pa.string()),
        _f("tick", pa.int64()),
        _f("time", TIME),
        _f("vwap", USD, True),
        _f("min", USD, True),
        _f("max", USD, True),
        _f("gpus", pa.int32()),
        _f("clusters", pa.int32()),
        _f("pending_gpus", pa.int32()),
        _f("reserve_price", USD),
        _f("tick_seconds", SECONDS),
        _f("core_rounds", pa.int32()),
        _f("core_exact", pa.bool_()),
    ]
)

CLUSTER_RATES = pa.schema(
    [
        _f("island", pa.string()),
        _f("tick", pa.int64()),
        _f("time", TIME),
        _f("cluster", pa.string()),
        _f("gpus", pa.int32()),
        _f("rate", USD),
        _f("amount_usd", USD),
    ]
)

ALLOCATIONS = pa.schema(
    [
        _f("island", pa.string()),
        _f("tick", pa.int64()),
        _f("time", TIME),
        _f("cluster", pa.string()),
        _f("node", pa.string()),
        _f("kind", pa.string()),
    ]
)

LADDER = pa.schema(
    [
        _f("island", pa.string()),
        _f("tick", pa.int64()),
        _f("time", TIME),
        _f("nodes", pa.int32()),
        _f("gpus", pa.int32()),
        _f("price", USD),
        _f("contestable_at", TIME, True),
    ]
)

VERDICTS = pa.schema(
    [
        _f("island", pa.string()),
        _f("tick", pa.int64()),
        _f("cluster", pa.string()),
        _f("verdict", pa.string()),
    ]
)

BLOCKS = pa.schema(
    [
        _f("id", pa.string()),
        _f("state", pa.string()),
        _f("ended_at", pa.int64(), True),
        _f("billed_until", pa.int64()),
        _f("negative_since", pa.int64(), True),
    ]
)
