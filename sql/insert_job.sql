INSERT INTO jobs (cluster, name, nodes, priority_class, limit_price, state, created_at, seq)
VALUES ($cluster, $name, $nodes, $priority_class, $limit_price, 'pending', $created_at, $seq)
