SELECT id, cluster, island, nodes, rate, starts_at, ends_at, state, ended_at, billed_until,
       negative_since
FROM base_load_blocks WHERE cluster = $cluster ORDER BY starts_at DESC, id DESC
