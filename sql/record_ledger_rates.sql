-- The ledger's check (record/ledger_check.py), over the history's views: every recorded rate of
-- island $island (NULL: every island) in [$start, $end) (NULL: open), what billing is re-run from.
SELECT island, tick, cluster, rate, gpus, tick_seconds
FROM cluster_rates
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick, cluster
