-- The island's live jobs (pending or running), in the order the tick takes them. A job's seq
-- (its order of acceptance) is given once, when it is made, so it orders the table: `$since` (a
-- seq no live job has less than, market/runner.py) lets DuckDB skip the row groups of jobs long
-- finished.
SELECT j.*
FROM jobs j JOIN clusters c ON c.id = j.cluster
WHERE c.island = $island AND j.seq >= $since AND j.state IN ('pending', 'running')
ORDER BY j.created_at, j.seq, j.cluster, j.name
