SELECT COALESCE(sum(units), 0)::HUGEINT AS units
FROM ledger
WHERE cluster = $cluster AND ts >= $since AND kind IN ('charge', 'refund', 'hold')
