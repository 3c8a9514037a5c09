UPDATE islands SET gpus_per_node = $gpus_per_node, nodes = $nodes,
    reserve_price = $reserve_price, node_spec = $node_spec
WHERE id = $id
