-- verify (record/verify.py): what each cluster held and paid per tick, as recorded.
SELECT island, tick, cluster, gpus, CAST(rate * 1000000 AS BIGINT), amount_usd
FROM cluster_rates
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick, cluster
