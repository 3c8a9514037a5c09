SELECT id, gpus_per_node, nodes, reserve_price, node_spec, base_load_cap
FROM islands WHERE id = $island
