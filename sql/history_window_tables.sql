-- The history tables with rows of island $island in the window [$start, $end), by name (a NULL
-- $island: the rows of no island, which only the ledger's export of them asks about). Each
-- condition is its table's export's (sql/history_<table>.sql) less the joins that only add
-- columns, so it never leaves out a table whose export would write a row: the exporter skips
-- the COPY of a table it leaves out (history/exporter.py).
SELECT 'cluster_rates' AS name FROM (
    SELECT 1 FROM cluster_rates
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'allocations' AS name FROM (
    SELECT 1 FROM allocations
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'ladder' AS name FROM (
    SELECT 1 FROM ladder
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'receipts' AS name FROM (
    SELECT 1 FROM receipts
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'ledger' AS name FROM (
    SELECT 1 FROM ledger
    WHERE island IS NOT DISTINCT FROM $island
      AND ts >= epoch_ns($start) AND ts < epoch_ns($end)
    LIMIT 1
)
UNION ALL
SELECT 'verdicts' AS name FROM (
    SELECT 1 FROM verdicts AS v
    JOIN ticks AS t ON t.island = v.island AND t.tick = v.tick
    WHERE v.island = $island AND t.time >= $start AND t.time < $end
    LIMIT 1
)
UNION ALL
SELECT 'pending' AS name FROM (
    SELECT 1 FROM pending AS p
    JOIN ticks AS t ON t.island = p.island AND t.tick = p.tick
    WHERE p.island = $island AND t.time >= $start AND t.time < $end
    LIMIT 1
)
UNION ALL
SELECT 'bids' AS name FROM (
    SELECT 1 FROM bids
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'islands' AS name FROM (
    SELECT 1 FROM island_terms
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'demand' AS name FROM (
    SELECT 1 FROM demand
    WHERE (island = $island OR island IS NULL) AND time >= $start AND time < $end
    LIMIT 1
)
UNION ALL
SELECT 'ticks' AS name FROM (
    SELECT 1 FROM ticks
    WHERE island = $island AND time >= $start AND time < $end
    LIMIT 1
)
