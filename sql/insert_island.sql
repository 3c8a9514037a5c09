INSERT INTO islands (id, gpus_per_node, nodes, reserve_price, node_spec, created_at)
VALUES ($id, $gpus_per_node, $nodes, $reserve_price, $node_spec, $created_at)
