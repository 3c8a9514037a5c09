-- verify (record/verify.py): each recorded receipt, money as integer µUSD and ledger units.
SELECT island, tick, cluster, nodes, gpus, CAST(rate * 1000000 AS BIGINT), amount_usd,
       CAST(amount_units AS HUGEINT), CAST(reserve_units AS HUGEINT),
       CAST(displaced_units AS HUGEINT), CAST(core_units AS HUGEINT),
       CAST(protected_units AS HUGEINT),
       list_transform(displaced, lambda x: [CAST(x.price * 1000000 AS BIGINT), x.nodes]),
       list_transform(coalition, lambda x: [CAST(x.price * 1000000 AS BIGINT), x.nodes]),
       CAST(coalition_value * 1000000 AS BIGINT),
       list_transform(protected_displaced, lambda x: [CAST(x.price * 1000000 AS BIGINT), x.nodes]),
       capped
FROM receipts
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick, cluster
