-- Clusters by id (those that lowered their demand while a tick cleared).
SELECT id, account, island, kind, max_gpus, max_price, demand_since, limit_price, spend_limit,
       spend_window_start, pending_reason
FROM clusters WHERE list_contains($ids, id) ORDER BY id
