-- Export one island's `demand` rows in [$start, $end) to the Parquet file $path, in the order
-- the market took them: those of its clusters and of the island itself, and those of accounts
-- (no island), which are in every island's files. Each with the island's tick it followed (0
-- before its first) and that tick's interval. Columns as history/dictionary.py describes them.
COPY (
    SELECT coalesce(t.tick, 0) AS tick, d.time, d.seq, d.cluster, d.method, d.path, d.body,
        t.tick_seconds
    FROM demand AS d
    ASOF LEFT JOIN (
        SELECT tick, time, tick_seconds FROM ticks WHERE island = $island
    ) AS t ON d.time >= t.time
    WHERE (d.island = $island OR d.island IS NULL) AND d.time >= $start AND d.time < $end
    ORDER BY d.seq
) TO $path (FORMAT parquet, COMPRESSION zstd)
