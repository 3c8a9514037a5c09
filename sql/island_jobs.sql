SELECT j.*
FROM jobs j JOIN clusters c ON c.id = j.cluster
WHERE c.island = $island AND j.state IN ('pending', 'running')
ORDER BY j.created_at, j.seq, j.cluster, j.name
