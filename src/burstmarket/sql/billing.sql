-- A cluster's billed ledger rows per time bucket and kind (market, or base_load for its block);
-- exact HUGEINT sums, rounded for display.
SELECT (period_start // $width) * $width AS bucket,
       CASE WHEN kind = 'base_load' THEN 'base_load' ELSE 'market' END AS kind,
       sum(gpu_ms)::HUGEINT AS gpu_ms,
       sum(units)::HUGEINT AS units
FROM ledger
WHERE cluster = $cluster AND kind IN ('charge', 'refund', 'hold', 'base_load')
  AND period_start >= $start AND period_start < $end
GROUP BY ALL
ORDER BY bucket, kind
