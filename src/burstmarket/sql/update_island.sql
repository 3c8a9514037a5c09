UPDATE islands SET gpus_per_node = $gpus_per_node, nodes = $nodes,
    reserve_price = $reserve_price, node_spec = $node_spec, base_load_cap = $base_load_cap
WHERE id = $id
