-- A cluster's billed ledger rows per time bucket (exact HUGEINT sums; rounded for display).
SELECT (period_start // $width) * $width AS bucket,
       sum(gpu_ms)::HUGEINT AS gpu_ms,
       sum(units)::HUGEINT AS units
FROM ledger
WHERE cluster = $cluster AND kind IN ('charge', 'refund', 'hold')
  AND period_start >= $start AND period_start < $end
GROUP BY bucket
ORDER BY bucket
