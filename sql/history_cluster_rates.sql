-- Export one island's `cluster_rates` rows in [$start, $end) to the Parquet file $path, each
-- with its tick's interval.
COPY (
    SELECT r.tick, r.time, r.cluster, r.gpus, r.rate, r.amount_usd, t.tick_seconds
    FROM cluster_rates AS r
    JOIN ticks AS t ON t.island = r.island AND t.tick = r.tick
    WHERE r.island = $island AND r.time >= $start AND r.time < $end
    ORDER BY r.time, r.tick, r.cluster
) TO $path (FORMAT parquet, COMPRESSION zstd)
