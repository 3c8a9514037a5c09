"""The data dictionary of the Parquet history: every table and column, with its type and unit.

One definition per table, in the order its export writes the columns (sql/history_<table>.sql);
a test reads real exported files against it, so it cannot drift from them. `docs/history-tables.md`
is its rendering (`python -m burstmarket.history.dictionary > docs/history-tables.md`, and a test
checks the file is current), and the service serves it as JSON at `/schema/history.json`, beside
the feed catalog's AsyncAPI document. Types are as DuckDB reads the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from burstmarket.history.layout import ACCOUNT_ROWS, TABLES


@dataclass(frozen=True, slots=True)
class HistoryColumn:
    name: str
    type: str
    description: str
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class HistoryTable:
    name: str
    description: str
    columns: tuple[HistoryColumn, ...]


USD_PER_GPU_HOUR = "DECIMAL(18,6)"
PENDING_DETAIL = (
    "STRUCT(since TIMESTAMP WITH TIME ZONE, balance DECIMAL(18,6), spend_left DECIMAL(18,6), "
    "worst_case DECIMAL(18,6), ceiling DECIMAL(18,6), reserve DECIMAL(18,6), nodes INTEGER, "
    "market_nodes INTEGER, contestable_at TIMESTAMP WITH TIME ZONE, price DECIMAL(18,6), "
    "gpus INTEGER)"
)

TICK = HistoryColumn("tick", "BIGINT", "Tick number, consecutive per island from 1.")
TIME = HistoryColumn(
    "time",
    "TIMESTAMP WITH TIME ZONE",
    "Market time of the tick (UTC). The tick stands for [time, time + tick_seconds).",
)
TICK_SECONDS = HistoryColumn(
    "tick_seconds",
    "DECIMAL(12,3)",
    "Seconds of market time the tick stands for: the interval it billed in advance. A row's "
    "GPU-hours are gpus × tick_seconds / 3600, whatever interval the market ran at (10 s "
    "live by default, 1800 s under `burstmarket simulate`).",
)

PARTITIONS = (
    HistoryColumn("island", "VARCHAR", "The island (hive partition `island=<id>` in the path)."),
    HistoryColumn("month", "VARCHAR", "UTC month of `time`, YYYY-MM (hive partition `month=`)."),
)
"""Read with `hive_partitioning = true`, every table also has these, from the file's path."""

HISTORY = (
    HistoryTable(
        "ticks",
        "One row per island and tick: the market statistics of that tick (base load excluded).",
        (
            TICK,
            TIME,
            HistoryColumn(
                "vwap",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour: the mean of the rates the "
                "clusters holding market nodes pay, weighted by their GPUs; NULL when none "
                "holds any.",
                nullable=True,
            ),
            HistoryColumn(
                "min", USD_PER_GPU_HOUR, "USD per GPU-hour: the lowest cluster rate.", nullable=True
            ),
            HistoryColumn(
                "max",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour: the highest cluster rate.",
                nullable=True,
            ),
            HistoryColumn("gpus", "INTEGER", "GPUs held in the market this tick."),
            HistoryColumn("clusters", "INTEGER", "Clusters holding market nodes this tick."),
            HistoryColumn(
                "pending_gpus", "INTEGER", "GPUs declared or asked for by jobs, not granted."
            ),
            HistoryColumn(
                "reserve_price",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour: the island's reserve price in force at the tick.",
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "cluster_rates",
        "One row per tick and cluster holding market nodes: what it holds and pays.",
        (
            TICK,
            TIME,
            HistoryColumn("cluster", "VARCHAR", "The cluster's id."),
            HistoryColumn("gpus", "INTEGER", "GPUs the cluster holds in the market this tick."),
            HistoryColumn("rate", USD_PER_GPU_HOUR, "USD per GPU-hour the cluster pays this tick."),
            HistoryColumn(
                "amount_usd",
                "DECIMAL(18,6)",
                "USD billed for the tick's interval: rate × gpus × tick_seconds / 3600, "
                "exact in the ledger, rounded here to 6 decimals.",
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "allocations",
        "One row per tick and node a cluster holds after the tick.",
        (
            TICK,
            TIME,
            HistoryColumn("cluster", "VARCHAR", "The cluster holding the node."),
            HistoryColumn("node", "VARCHAR", "The node's id (`<island>-n<index>`)."),
            HistoryColumn(
                "kind",
                "VARCHAR",
                "`market` (won or kept in the auction), `protected` "
                "(held under its protection window) or `base_load` (a base load block's).",
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "ladder",
        "One row per tick and rung of the price-to-win ladder.",
        (
            TICK,
            TIME,
            HistoryColumn("nodes", "INTEGER", "Whole nodes a new demand asks for."),
            HistoryColumn("gpus", "INTEGER", "The same in GPUs."),
            HistoryColumn(
                "price",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour it takes to win them: now, or for a rung not "
                "contestable now, at contestable_at against the demand standing at "
                "the tick.",
            ),
            HistoryColumn(
                "contestable_at",
                "TIMESTAMP WITH TIME ZONE",
                "NULL: contestable in the "
                "tick's auction. Otherwise the earliest time enough protection windows end "
                "for the rung to be contested.",
                nullable=True,
            ),
            HistoryColumn(
                "later",
                "STRUCT(since TIMESTAMP WITH TIME ZONE, price DECIMAL(18,6))[]",
                "The rung's price (USD per GPU-hour) from each later time protection windows "
                "end within the hour of the tick, where it changes. NULL in parts exported "
                "before it was kept.",
                nullable=True,
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "receipts",
        "One row per tick and cluster holding market nodes: why the tick billed it what it did "
        '(docs/market.md "Receipts"). The parts add up exactly to amount_units; other '
        "clusters appear only as price levels × nodes, never by id.",
        (
            TICK,
            TIME,
            HistoryColumn("cluster", "VARCHAR", "The cluster the receipt is for."),
            HistoryColumn("nodes", "INTEGER", "Market nodes it holds: won and protected."),
            HistoryColumn("gpus", "INTEGER", "The same in GPUs."),
            HistoryColumn("rate", USD_PER_GPU_HOUR, "USD per GPU-hour it pays this tick."),
            HistoryColumn(
                "amount_usd",
                "DECIMAL(18,6)",
                "USD the tick billed for its interval (amount_units rounded half up to 6 "
                "decimals).",
            ),
            HistoryColumn(
                "amount_units",
                "DECIMAL(38,0)",
                "The same, exact, in ledger units (µUSD-per-hour × ms: 3.6e12 make one USD): "
                "rate × gpus × the interval's ms.",
            ),
            HistoryColumn(
                "reserve_units",
                "DECIMAL(38,0)",
                "Ledger units of the reserve part: the reserve price on the won nodes.",
            ),
            HistoryColumn(
                "displaced_units",
                "DECIMAL(38,0)",
                "Ledger units of the displaced value (VCG): what the demand its won nodes keep "
                "out would pay over the reserve.",
            ),
            HistoryColumn(
                "core_units",
                "DECIMAL(38,0)",
                "Ledger units of the core's addition above VCG (0 when VCG is in the core).",
            ),
            HistoryColumn(
                "protected_units",
                "DECIMAL(38,0)",
                "Ledger units of the protected nodes' payment (what they displace, capped at "
                "the locked price). The rate's rounding to the µUSD (under half a µUSD per "
                "GPU-hour) is in the largest of the four parts.",
            ),
            HistoryColumn(
                "displaced",
                "STRUCT(price DECIMAL(18,6), nodes INTEGER)[]",
                "The demand of other clusters its won nodes keep out: price levels (USD per "
                "GPU-hour) × nodes; negative nodes are demand holding nodes now that would "
                "give way.",
            ),
            HistoryColumn(
                "coalition",
                "STRUCT(price DECIMAL(18,6), nodes INTEGER)[]",
                "The blocking coalition that required the core's addition, as the same price "
                "levels; NULL when the core added nothing.",
                nullable=True,
            ),
            HistoryColumn(
                "coalition_value",
                "DECIMAL(18,6)",
                "USD per hour over the reserve the coalition offers: the least the winners it "
                "outbids pay together above the reserve; NULL with no coalition.",
                nullable=True,
            ),
            HistoryColumn(
                "protected_displaced",
                "STRUCT(price DECIMAL(18,6), nodes INTEGER)[]",
                "What its protected nodes keep out, as price levels × nodes.",
            ),
            HistoryColumn(
                "capped",
                "BOOLEAN",
                "The protected part is the locked price (the cap), not what they displace.",
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "ledger",
        "Every money row of the store's ledger, once: market billing (`charge`, `refund`, "
        "`hold`), base load billing (`base_load`), the spend guard's `commitment` and "
        "`release`, `deposit`, `wire`, and a base load purchase's `security_deposit`, "
        "`deposit_return` and `receivable` (what each kind is, and which the balance sums: "
        'docs/history.md "The ledger, verdicts and pending"). A row is in the window and '
        "island of its own island and time; one with no island (an account's deposit, a "
        "wire) is "
        f"under `island={ACCOUNT_ROWS}`, which reads as a NULL island. Sorted by time.",
        (
            HistoryColumn(
                "time",
                "TIMESTAMP WITH TIME ZONE",
                "Market time the row was written (UTC): its tick's time, or the time of the "
                "request that wrote it.",
            ),
            HistoryColumn(
                "tick",
                "BIGINT",
                "The tick that wrote the row; NULL for a row a request wrote (a deposit, a "
                "scale-down's refund, a base load purchase).",
                nullable=True,
            ),
            HistoryColumn("account", "VARCHAR", "The account the row is money of."),
            HistoryColumn(
                "cluster",
                "VARCHAR",
                "The cluster the row bills or is for; NULL for an account's own row (a "
                "deposit, a wire that settled no purchase).",
                nullable=True,
            ),
            HistoryColumn("kind", "VARCHAR", "What the row is: one of the kinds above."),
            HistoryColumn(
                "block",
                "VARCHAR",
                "The base load block a `base_load` row bills; the purchase a "
                "`security_deposit`, `deposit_return`, `receivable` or `wire` is for.",
                nullable=True,
            ),
            HistoryColumn(
                "node",
                "VARCHAR",
                "The node a row of one node bills (a hold, a refund, held time).",
                nullable=True,
            ),
            HistoryColumn(
                "period_start",
                "TIMESTAMP WITH TIME ZONE",
                "Start of the interval a billed row covers; NULL for a row with none.",
                nullable=True,
            ),
            HistoryColumn(
                "period_end",
                "TIMESTAMP WITH TIME ZONE",
                "End (exclusive) of that interval.",
                nullable=True,
            ),
            HistoryColumn(
                "gpus",
                "INTEGER",
                "GPUs the row bills over its interval (negative: given back); the GPUs a "
                "commitment or release covers; 0 for a row of money alone.",
            ),
            HistoryColumn(
                "rate",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour a billed row bills at; NULL for a row with no interval.",
                nullable=True,
            ),
            HistoryColumn(
                "amount_units",
                "DECIMAL(38,0)",
                "The amount, exact, in ledger units (µUSD per hour × ms: 3.6e12 make one "
                "USD): rate × gpus × the interval's ms for a billed row. Positive: owed by "
                "the account; negative: credit (a deposit, a wire, a refund). Sum these for "
                "exact totals.",
            ),
            HistoryColumn(
                "amount_usd",
                "DECIMAL(18,6)",
                "The same in USD, rounded half away from zero to 6 decimals (not exact: sum "
                "amount_units, then divide by 3.6e12).",
            ),
            HistoryColumn(
                "tick_seconds",
                "DECIMAL(12,3)",
                "The interval of the tick that wrote the row; NULL with no tick.",
                nullable=True,
            ),
        ),
    ),
    HistoryTable(
        "verdicts",
        "One row per tick and verdict standing against a cluster's demand after the tick "
        '(docs/market.md "Refusals").',
        (
            TICK,
            TIME,
            HistoryColumn("cluster", "VARCHAR", "The cluster the verdict is on."),
            HistoryColumn(
                "verdict",
                "VARCHAR",
                "`bid-too-low` (its demand is under the reserve), `spend-limit` or "
                "`billing-hold` (its new demand is held back).",
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "pending",
        "One row per tick and cluster whose demand waits after the tick: the GPUs it asks "
        'for and does not hold, and why (docs/market.md "Why it waits"), as the tick '
        "decided them.",
        (
            TICK,
            TIME,
            HistoryColumn("cluster", "VARCHAR", "The cluster."),
            HistoryColumn("gpus", "INTEGER", "GPUs asked for and not held after the tick."),
            HistoryColumn(
                "pending_reason",
                "VARCHAR",
                "The first cause that holds, in docs/market.md's order (`billing-hold`, "
                "`spend-limit`, `bid-too-low`, `PackingDisabled`, `ReservedBusy`, "
                "`ReservedTooSmall`, `no-supply`, `windows`, `outbid`); NULL when none does.",
                nullable=True,
            ),
            HistoryColumn(
                "pending_detail",
                PENDING_DETAIL,
                "The cause's figures, each member NULL unless the cause sets it: `since` "
                "(billing-hold began), `balance`, `spend_left`, `worst_case` (USD), "
                "`ceiling`, `reserve`, `price` (USD per GPU-hour: the price to win then "
                "under windows, the price to win under outbid), `nodes`, `market_nodes`, "
                "`gpus` (counts), `contestable_at` (when the nodes can be won). NULL with "
                "no cause.",
                nullable=True,
            ),
            TICK_SECONDS,
        ),
    ),
    # --- the record: what each tick's auction used (docs/history.md "The record") ---------
    HistoryTable(
        "bids",
        "Everything a tick's auctions used, so the engine re-runs them from the history alone "
        "(`burstmarket verify`): per tick, the auction it cleared (`auction` = `now`) and the "
        "auction its ladders were priced on, the one the next tick would run if nothing else "
        "changed (`next`), each as rows of parts. Prices are DECIMAL(18,6) USD per GPU-hour, "
        "exact to the µUSD the engine works in.",
        (
            TICK,
            TIME,
            HistoryColumn(
                "auction",
                "VARCHAR",
                "`now`: the auction the tick cleared (its winners, payments, rates and "
                "statistics). `next`: the auction the published ladder priced.",
            ),
            HistoryColumn(
                "part",
                "VARCHAR",
                "`supply`: one row per auction, the contestable supply (`nodes`), the reserve "
                "(`price`) and `gpus_per_node`. `unit`: a unit that bid (`cluster`, `unit`, "
                "`nodes` all or nothing, `price`, `age`). `protected`: nodes a cluster holds "
                "fixed under an open window or owed as replacements, assessed up to their cap "
                "(`price`). `step_down`: nodes stepping down from a base load block under "
                "their window, fixed outside the auction at their lock (`price`). "
                "`release` (`next` only): `nodes` fixed now that become contestable at `ends_at`. "
                "`release_unit` (`next` only): a unit the holders of that release bid then.",
            ),
            HistoryColumn(
                "cluster",
                "VARCHAR",
                "The cluster of a unit, protected group, step-down or release unit; NULL on "
                "`supply` and `release` rows.",
                nullable=True,
            ),
            HistoryColumn(
                "unit",
                "VARCHAR",
                "The unit's id (the auction's winners are named by it); NULL but on `unit` "
                "and `release_unit` rows.",
                nullable=True,
            ),
            HistoryColumn(
                "nodes",
                "INTEGER",
                "Whole nodes: the supply, a unit's size, a group's or a release's node count.",
            ),
            HistoryColumn(
                "price",
                USD_PER_GPU_HOUR,
                "USD per GPU-hour: the reserve (`supply`), the bid (`unit`, `release_unit`), "
                "the cap (`protected`) or the lock (`step_down`); NULL on `release` rows.",
                nullable=True,
            ),
            HistoryColumn(
                "age",
                "INTEGER",
                "A unit's place in the age order the tick sorted its auction's units in (0: "
                "the oldest; the auction breaks equal bids by it); for a `release_unit`, its "
                "place among that release's units. NULL on other rows.",
                nullable=True,
            ),
            HistoryColumn(
                "ends_at",
                "TIMESTAMP WITH TIME ZONE",
                "When a release's windows end (`release`, `release_unit`); NULL on other rows.",
                nullable=True,
            ),
            HistoryColumn(
                "locked_by_clearing",
                "BOOLEAN",
                "On `step_down` rows: the nodes had no price locked, so the tick locked them "
                "at the lowest rate its auction cleared at (never under the reserve; the "
                "reserve when nothing cleared). NULL on other rows.",
                nullable=True,
            ),
            HistoryColumn(
                "gpus_per_node",
                "INTEGER",
                "GPUs per node the auction priced (`supply` rows); NULL on other rows.",
                nullable=True,
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "islands",
        "Each island as it was: one row per island for the first tick it ran (whatever of its "
        "terms came before) and one for each later tick that ran on terms changed since the "
        "tick before (an operator's change takes effect at the next tick). The terms in force "
        "at a tick are those of the island's last row at or before it.",
        (
            HistoryColumn("tick", "BIGINT", "The first tick that ran on these terms."),
            HistoryColumn(
                "time",
                "TIMESTAMP WITH TIME ZONE",
                "That tick's market time (UTC): the terms are valid from it.",
            ),
            HistoryColumn("gpus_per_node", "INTEGER", "GPUs in each node of the island."),
            HistoryColumn("nodes", "INTEGER", "Nodes of the island, in service or not."),
            HistoryColumn(
                "node_spec",
                "VARCHAR",
                "The node's description as the operator gave it (JSON text); NULL when none.",
                nullable=True,
            ),
            HistoryColumn(
                "reserve_price", USD_PER_GPU_HOUR, "USD per GPU-hour: the island's reserve price."
            ),
            TICK_SECONDS,
        ),
    ),
    HistoryTable(
        "demand",
        "The demand journal: one row per request that changed the market (tenants' "
        "declarations, bids, jobs, spend limits and purchases; the operator's islands, "
        "accounts, clusters, credits and node actions), in the order the market took them, "
        "written in the transaction of the change (a refused request changed nothing and is "
        "not here). An island's files hold its clusters' and its own requests, and every "
        "account's (an account is no island's: the same rows, same seq, under each island). "
        '`burstmarket backtest` places them again at their time (docs/analysts.md "Backtests").',
        (
            HistoryColumn(
                "tick",
                "BIGINT",
                "The island's tick the request came after (0: before the island's first tick).",
            ),
            HistoryColumn(
                "time",
                "TIMESTAMP WITH TIME ZONE",
                "Market time of the change (UTC): at or after that tick's time, before the "
                "next tick's.",
            ),
            HistoryColumn(
                "seq",
                "BIGINT",
                "The order the changes committed in, across islands (gaps allowed).",
            ),
            HistoryColumn(
                "cluster",
                "VARCHAR",
                "The cluster it acts for (a tenant's request) or names (an operator's); NULL "
                "for one that names none.",
                nullable=True,
            ),
            HistoryColumn("method", "VARCHAR", "The request's HTTP method."),
            HistoryColumn(
                "path", "VARCHAR", "The request's path (docs/api.md); `/api/admin/` the operator's."
            ),
            HistoryColumn(
                "body", "VARCHAR", "The request's JSON body as sent; empty for a request with none."
            ),
            HistoryColumn(
                "tick_seconds",
                "DECIMAL(12,3)",
                "The interval of the tick it came after (NULL before the island's first).",
                nullable=True,
            ),
        ),
    ),
)
assert {t.name for t in HISTORY} == set(TABLES)


def as_json() -> dict[str, Any]:
    """The dictionary as served at `/schema/history.json`."""

    def columns(found: tuple[HistoryColumn, ...]) -> list[dict[str, Any]]:
        return [
            {"name": c.name, "type": c.type, "nullable": c.nullable, "description": c.description}
            for c in found
        ]

    return {
        "layout": "history/<table>/island=<id>/month=<YYYY-MM>/<start>_<end>.parquet",
        "partitions": columns(PARTITIONS),
        "tables": [
            {"name": t.name, "description": t.description, "columns": columns(t.columns)}
            for t in HISTORY
        ],
    }


def markdown() -> str:
    lines = [
        "# History tables",
        "",
        "<!-- Generated by `python -m burstmarket.history.dictionary`"
        " from src/burstmarket/history/dictionary.py: edit that, not this. -->",
        "",
        "Every file is `history/<table>/island=<id>/month=<YYYY-MM>/<start>_<end>.parquet`"
        " (see [history.md](history.md)). Read with `hive_partitioning = true`, each table"
        " also has the partition columns:",
        "",
        *_rows(PARTITIONS),
    ]
    for table in HISTORY:
        lines += ["", f"## {table.name}", "", table.description, "", *_rows(table.columns)]
    return "\n".join(lines) + "\n"


def _rows(columns: tuple[HistoryColumn, ...]) -> list[str]:
    rows = ["| column | type | null | meaning |", "|---|---|---|---|"]
    for c in columns:
        null = "yes" if c.nullable else "no"
        rows.append(f"| `{c.name}` | {c.type} | {null} | {c.description} |")
    return rows


if __name__ == "__main__":
    print(markdown(), end="")
