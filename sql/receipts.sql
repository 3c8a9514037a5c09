-- A cluster's receipts (docs/api.md `GET /api/receipts`): of tick $tick, or of the ticks whose
-- time is in [$start, $end); the newest $limit of them, given oldest first.
SELECT * FROM (
    SELECT tick, time, nodes, gpus, rate, amount, reserve, displaced, core, protected,
           displaced_levels, coalition, coalition_value, protected_levels, capped
    FROM receipts
    WHERE cluster = $cluster
      AND ($tick IS NULL OR tick = $tick)
      AND time >= $start AND time < $end
    ORDER BY time DESC, tick DESC
    LIMIT $limit
)
ORDER BY time, tick
