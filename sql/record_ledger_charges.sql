-- The ledger's check, over the history's views: each tick's charge of its interval in advance
-- (from the tick's own time; held time a tick bills before it ends there instead), of island
-- $island (NULL: every island) in [$start, $end) (NULL: open).
SELECT island, tick, cluster, amount_units
FROM ledger
WHERE kind = 'charge' AND tick IS NOT NULL AND period_start = time AND island IS NOT NULL
  AND ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick, cluster
