-- verify (record/verify.py): the market nodes (won, kept or protected; base load apart) each
-- cluster held after each tick.
SELECT island, tick, cluster, count(*)
FROM allocations
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
  AND kind <> 'base_load'
GROUP BY island, tick, cluster
ORDER BY island, tick, cluster
