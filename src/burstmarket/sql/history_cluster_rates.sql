-- Export one island's `cluster_rates` rows in [$start, $end) to the Parquet file $path.
COPY (
    SELECT tick, time, cluster, gpus, rate, amount_usd
    FROM cluster_rates
    WHERE island = $island AND time >= $start AND time < $end
    ORDER BY time, tick, cluster
) TO $path (FORMAT parquet, COMPRESSION zstd)
