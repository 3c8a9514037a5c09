SELECT id, gpus_per_node, nodes, reserve_price, node_spec FROM islands ORDER BY id
