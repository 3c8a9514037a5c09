-- Export one island's `verdicts` rows in [$start, $end) to the Parquet file $path, each with
-- its tick's time and interval.
COPY (
    SELECT v.tick, t.time, v.cluster, v.verdict, t.tick_seconds
    FROM verdicts AS v
    JOIN ticks AS t ON t.island = v.island AND t.tick = v.tick
    WHERE v.island = $island AND t.time >= $start AND t.time < $end
    ORDER BY t.time, v.tick, v.cluster, v.verdict
) TO $path (FORMAT parquet, COMPRESSION zstd)
