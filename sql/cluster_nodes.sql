-- The nodes a cluster has in service (market and base load); an out-of-service node stays with
-- its cluster, unbilled, but is not delivered to it (GET /api/admin/islands/{id}/nodes shows it).
SELECT * FROM nodes WHERE cluster = $cluster AND service IS NULL ORDER BY idx
