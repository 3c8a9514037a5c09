-- The island's terms as the tick $tick at $time ran on them, recorded when they differ from the
-- island's last recorded row (its first tick always records them): the history's `islands`.
INSERT INTO island_terms
SELECT $island, $tick, $time, $gpus_per_node, $nodes, $node_spec, $reserve_price
WHERE NOT EXISTS (
    SELECT 1
    FROM (
        SELECT * FROM island_terms WHERE island = $island ORDER BY tick DESC LIMIT 1
    ) AS last
    WHERE last.gpus_per_node = $gpus_per_node
      AND last.nodes = $nodes
      AND last.node_spec IS NOT DISTINCT FROM $node_spec
      AND last.reserve_price = $reserve_price
)
