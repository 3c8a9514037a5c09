-- `burstmarket replay` (feed/replay.py): one island's recorded `ticks` of [$start, $end), read
-- from its Parquet history parts $files, into the store's own table, so the feeds' SQL reads
-- them as it reads a live store. By name: parts from before a column existed read it NULL.
INSERT INTO ticks (
    island, tick, time, vwap, min, max, gpus, clusters, pending_gpus, reserve_price, tick_seconds
)
SELECT
    $island, tick, time, vwap, min, max, gpus, clusters, pending_gpus, reserve_price, tick_seconds
FROM read_parquet($files, hive_partitioning = false, union_by_name = true)
WHERE time >= $start AND time < $end
