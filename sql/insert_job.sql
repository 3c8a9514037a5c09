INSERT INTO jobs (cluster, name, nodes, priority_class, limit_price, state, created_at, seq, pods,
                  gpus_per_pod)
VALUES ($cluster, $name, $nodes, $priority_class, $limit_price, 'pending', $created_at, $seq,
        $pods, $gpus_per_pod)
