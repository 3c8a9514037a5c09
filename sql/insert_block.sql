INSERT INTO base_load_blocks (id, cluster, island, nodes, rate, starts_at, ends_at, state,
                              billed_until)
VALUES ($id, $cluster, $island, $nodes, $rate, $starts_at, $ends_at, 'live', $starts_at)
