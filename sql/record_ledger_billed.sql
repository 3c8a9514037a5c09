-- The ledger's check, over the history's views: every billed row (market, hold, refund, base
-- load: the kinds $kinds) of island $island (NULL: every island) in [$start, $end) (NULL: open),
-- with the terms its amount is made of.
SELECT island, tick, time, cluster, kind, period_start, period_end, gpus, rate, amount_units,
       amount_usd
FROM ledger
WHERE list_contains($kinds, kind) AND island IS NOT NULL
  AND ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, time, tick, cluster
