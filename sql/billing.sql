-- A cluster's billed ledger rows per time bucket and kind (market, or base_load for its block),
-- over [$start, $end). A row that covers several buckets (a minimum hold, a long tick, a refund)
-- is spread over them by the milliseconds it has in each: a row's units are rate × GPUs × ms,
-- so its parts are exact and add up to it. Exact HUGEINT sums, rounded for display in Python.
WITH billed AS (
    SELECT CASE WHEN kind = 'base_load' THEN 'base_load' ELSE 'market' END AS kind,
           greatest(period_start, $start) AS lo, least(period_end, $end) AS hi, gpus, rate
    FROM ledger
    WHERE cluster = $cluster AND kind IN ('charge', 'refund', 'hold', 'base_load')
      AND period_end > $start AND period_start < $end
),
parts AS (
    SELECT kind, lo, hi, gpus, rate,
           unnest(range(lo // $width, (hi - 1) // $width + 1)) * $width AS bucket
    FROM billed
    WHERE hi > lo
),
spans AS (
    SELECT bucket, kind, gpus, rate,
           (least(hi, bucket + $width) - greatest(lo, bucket)) // 1000000 AS ms
    FROM parts
)
SELECT bucket, kind,
       sum(gpus * ms)::HUGEINT AS gpu_ms,
       sum(rate::HUGEINT * gpus * ms)::HUGEINT AS units
FROM spans
GROUP BY ALL
ORDER BY bucket, kind
