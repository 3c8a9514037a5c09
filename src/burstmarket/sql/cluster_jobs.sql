SELECT cluster, name, nodes, priority_class, limit_price, state, created_at, provisioned_at,
       gang_price, finished_at, bid_too_low, seq
FROM jobs WHERE cluster = $cluster ORDER BY created_at, seq, name
