-- Export one island's `ticks` rows in [$start, $end) to the Parquet file $path, sorted by time.
-- `island` is left out: it is the hive partition in the file's path. Columns as
-- history/dictionary.py describes them.
COPY (
    SELECT tick, time, vwap, min, max, gpus, clusters, pending_gpus, reserve_price, tick_seconds
    FROM ticks
    WHERE island = $island AND time >= $start AND time < $end
    ORDER BY time, tick
) TO $path (FORMAT parquet, COMPRESSION zstd)
