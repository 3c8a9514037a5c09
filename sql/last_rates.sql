-- Each island's per-cluster rates at its last committed tick, in µUSD per GPU-hour.
SELECT r.island, r.cluster, CAST(r.rate * 1000000 AS BIGINT) AS rate
FROM cluster_rates r
JOIN (SELECT island, max(tick) AS tick FROM ticks GROUP BY island) t
  ON t.island = r.island AND t.tick = r.tick
ORDER BY r.island, r.cluster
