-- Export one island's `islands` rows in [$start, $end) to the Parquet file $path: its terms from
-- each tick that first ran on them, with that tick's interval.
COPY (
    SELECT i.tick, i.time, i.gpus_per_node, i.nodes, i.node_spec, i.reserve_price, t.tick_seconds
    FROM island_terms AS i
    JOIN ticks AS t ON t.island = i.island AND t.tick = i.tick
    WHERE i.island = $island AND i.time >= $start AND i.time < $end
    ORDER BY i.time, i.tick
) TO $path (FORMAT parquet, COMPRESSION zstd)
