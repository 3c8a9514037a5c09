-- Export one island's `ladder` rows in [$start, $end) to the Parquet file $path, each with its
-- tick's interval.
COPY (
    SELECT l.tick, l.time, l.nodes, l.gpus, l.price, l.contestable_at, l.later, t.tick_seconds
    FROM ladder AS l
    JOIN ticks AS t ON t.island = l.island AND t.tick = l.tick
    WHERE l.island = $island AND l.time >= $start AND l.time < $end
    ORDER BY l.time, l.tick, l.nodes
) TO $path (FORMAT parquet, COMPRESSION zstd)
