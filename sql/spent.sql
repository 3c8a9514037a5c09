-- Billed units of each limited cluster of an island since its spend window started.
SELECT l.cluster, sum(l.units)::HUGEINT AS units
FROM ledger l JOIN clusters c ON c.id = l.cluster
WHERE c.island = $island AND c.spend_limit IS NOT NULL AND c.spend_window_start IS NOT NULL
  AND l.ts >= c.spend_window_start AND l.kind IN ('charge', 'refund', 'hold')
GROUP BY l.cluster
ORDER BY l.cluster
