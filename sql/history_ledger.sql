-- Export the `ledger` rows of one island in [$start, $end) to the Parquet file $path; a NULL
-- $island exports the rows of no island (an account's deposits, its wires). Times are market
-- ns in the store, TIMESTAMPTZ here (to the µs); amounts exact as DECIMAL(38, 0) ledger units
-- (Parquet has no 128-bit integer), and in USD rounded half away from zero, as
-- money.units_to_usd rounds them; rates µUSD per GPU-hour as USD.
COPY (
    SELECT to_timestamp(0) + to_microseconds(l.ts // 1000) AS time,
           l.tick, l.account, l.cluster, l.kind, l.block, l.node,
           to_timestamp(0) + to_microseconds(l.period_start // 1000) AS period_start,
           to_timestamp(0) + to_microseconds(l.period_end // 1000) AS period_end,
           l.gpus,
           (l.rate::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6) AS rate,
           l.units::DECIMAL(38, 0) AS amount_units,
           (sign(l.units) * ((2 * abs(l.units) + 3600000) // 7200000)::DECIMAL(18, 0)
               * 0.000001)::DECIMAL(18, 6) AS amount_usd,
           t.tick_seconds
    FROM ledger AS l
    LEFT JOIN ticks AS t ON t.island = l.island AND t.tick = l.tick
    WHERE l.island IS NOT DISTINCT FROM $island
      AND l.ts >= epoch_ns($start) AND l.ts < epoch_ns($end)
    ORDER BY l.ts, l.id
) TO $path (FORMAT parquet, COMPRESSION zstd)
