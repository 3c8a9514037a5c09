-- Export one island's `ladder` rows in [$start, $end) to the Parquet file $path.
COPY (
    SELECT tick, time, nodes, gpus, price
    FROM ladder
    WHERE island = $island AND time >= $start AND time < $end
    ORDER BY time, tick, nodes
) TO $path (FORMAT parquet, COMPRESSION zstd)
