-- Export one island's `allocations` rows in [$start, $end) to the Parquet file $path.
COPY (
    SELECT tick, time, cluster, node, kind
    FROM allocations
    WHERE island = $island AND time >= $start AND time < $end
    ORDER BY time, tick, cluster, node
) TO $path (FORMAT parquet, COMPRESSION zstd)
