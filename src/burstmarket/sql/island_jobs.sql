SELECT j.cluster, j.name, j.nodes, j.priority_class, j.limit_price, j.state, j.created_at,
       j.provisioned_at, j.gang_price, j.finished_at, j.bid_too_low, j.seq
FROM jobs j JOIN clusters c ON c.id = j.cluster
WHERE c.island = $island AND j.state IN ('pending', 'running')
ORDER BY j.created_at, j.seq, j.cluster, j.name
