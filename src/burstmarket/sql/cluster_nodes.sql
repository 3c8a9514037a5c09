-- The nodes a cluster has in service (market and base load); an out-of-service node stays with
-- its cluster, unbilled, but is not delivered to it (GET /api/admin/islands/{id}/nodes shows it).
SELECT island, id, idx, cluster, job, granted_at, window_ends_at, hold_until, idle_since,
       locked_price, commit_price, commit_ends_at, service, owed_until, block, billed_until
FROM nodes WHERE cluster = $cluster AND service IS NULL ORDER BY idx
