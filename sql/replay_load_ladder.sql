-- `burstmarket replay` (feed/replay.py): one island's recorded `ladder` rungs of [$start, $end),
-- from its Parquet history parts $files, into the store's own table. A part exported before
-- `later` was kept reads it NULL: the rung had no later prices then, so none here.
INSERT INTO ladder (island, tick, time, nodes, gpus, price, contestable_at, later)
SELECT
    $island,
    tick,
    time,
    nodes,
    gpus,
    price,
    contestable_at,
    coalesce(later, []::STRUCT(since TIMESTAMPTZ, price DECIMAL(18, 6))[])
FROM read_parquet($files, hive_partitioning = false, union_by_name = true)
WHERE time >= $start AND time < $end
