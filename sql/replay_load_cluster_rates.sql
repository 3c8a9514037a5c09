-- `burstmarket replay` (feed/replay.py): one island's recorded `cluster_rates` of
-- [$start, $end), from its Parquet history parts $files, into the store's own table.
INSERT INTO cluster_rates (island, tick, time, cluster, gpus, rate, amount_usd)
SELECT $island, tick, time, cluster, gpus, rate, amount_usd
FROM read_parquet($files, hive_partitioning = false, union_by_name = true)
WHERE time >= $start AND time < $end
