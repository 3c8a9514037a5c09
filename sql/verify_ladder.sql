-- verify (record/verify.py): each recorded rung of the published ladder, prices as integer
-- µUSD, times as market ns.
SELECT island, tick, nodes, gpus, CAST(price * 1000000 AS BIGINT),
       epoch_us(contestable_at) * 1000,
       list_transform(later, lambda x: [epoch_us(x.since) * 1000, CAST(x.price * 1000000 AS BIGINT)])
FROM ladder
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick, nodes
