-- What each of $clusters has spent since $since (the windows a tick opened at its time), of the
-- $kinds a window sums. Its rows are the last few written: the ledger's row groups are in time
-- order, so DuckDB's min/max per group skips the rest.
SELECT cluster, sum(units)::HUGEINT AS units
FROM ledger
WHERE ts >= $since AND list_contains($clusters, cluster) AND list_contains($kinds, kind)
GROUP BY cluster
ORDER BY cluster
