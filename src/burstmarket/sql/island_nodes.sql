SELECT island, id, idx, cluster, job, granted_at, window_ends_at, hold_until, idle_since,
       locked_price, commit_price, commit_ends_at, service, owed_until, block, billed_until
FROM nodes WHERE island = $island ORDER BY idx
