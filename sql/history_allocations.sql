-- Export one island's `allocations` rows in [$start, $end) to the Parquet file $path, each with
-- its tick's interval.
COPY (
    SELECT a.tick, a.time, a.cluster, a.node, a.kind, t.tick_seconds
    FROM allocations AS a
    JOIN ticks AS t ON t.island = a.island AND t.tick = a.tick
    WHERE a.island = $island AND a.time >= $start AND a.time < $end
    ORDER BY a.time, a.tick, a.cluster, a.node
) TO $path (FORMAT parquet, COMPRESSION zstd)
