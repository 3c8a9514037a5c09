-- verify (record/verify.py): the ledger units each tick charged a cluster beyond its interval
-- in advance (held time not billed before, a step-down's time at its lock), which
-- cluster_rates.amount_usd adds to the interval's charge.
SELECT island, tick, cluster, CAST(sum(amount_units) AS HUGEINT)
FROM ledger
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
  AND kind = 'charge' AND tick IS NOT NULL AND period_start < time
GROUP BY island, tick, cluster
ORDER BY island, tick, cluster
