-- Nodes the island's live base load blocks reserve (against islands.base_load_cap).
SELECT COALESCE(sum(nodes), 0)::BIGINT AS nodes
FROM base_load_blocks WHERE island = $island AND state = 'live'
