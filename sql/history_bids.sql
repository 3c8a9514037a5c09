-- Export one island's `bids` rows in [$start, $end) to the Parquet file $path, each with its
-- tick's interval: every part of the tick's two auctions (history/dictionary.py says which).
COPY (
    SELECT b.tick, b.time, b.auction, b.part, b.cluster, b.unit, b.nodes, b.price, b.age, b.ends_at,
           b.locked_by_clearing, b.gpus_per_node, t.tick_seconds
    FROM bids AS b
    JOIN ticks AS t ON t.island = b.island AND t.tick = b.tick
    WHERE b.island = $island AND b.time >= $start AND b.time < $end
    ORDER BY ALL
) TO $path (FORMAT parquet, COMPRESSION zstd)
