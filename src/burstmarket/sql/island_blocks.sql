SELECT id, cluster, island, nodes, rate, starts_at, ends_at, state, ended_at, billed_until,
       negative_since
FROM base_load_blocks WHERE island = $island AND state = 'live' ORDER BY starts_at, id
