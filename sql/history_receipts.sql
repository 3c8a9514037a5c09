-- Export one island's `receipts` rows in [$start, $end) to the Parquet file $path: ledger units
-- as DECIMAL(38, 0) (Parquet has no 128-bit integer; DuckDB would write HUGEINT as a DOUBLE),
-- prices in USD per GPU-hour, each row with its tick's interval.
COPY (
    SELECT r.tick, r.time, r.cluster, r.nodes, r.gpus, r.rate,
           (((2 * r.amount + 3600000) // 7200000)::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6)
               AS amount_usd,
           r.amount::DECIMAL(38, 0) AS amount_units,
           r.reserve::DECIMAL(38, 0) AS reserve_units,
           r.displaced::DECIMAL(38, 0) AS displaced_units,
           r.core::DECIMAL(38, 0) AS core_units,
           r.protected::DECIMAL(38, 0) AS protected_units,
           list_transform(r.displaced_levels, lambda x: {
               'price': (x.price::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6), 'nodes': x.nodes
           }) AS displaced,
           list_transform(r.coalition, lambda x: {
               'price': (x.price::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6), 'nodes': x.nodes
           }) AS coalition,
           (r.coalition_value::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6) AS coalition_value,
           list_transform(r.protected_levels, lambda x: {
               'price': (x.price::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6), 'nodes': x.nodes
           }) AS protected_displaced,
           r.capped, t.tick_seconds
    FROM receipts AS r
    JOIN ticks AS t ON t.island = r.island AND t.tick = r.tick
    WHERE r.island = $island AND r.time >= $start AND r.time < $end
    ORDER BY r.time, r.tick, r.cluster
) TO $path (FORMAT parquet, COMPRESSION zstd)
