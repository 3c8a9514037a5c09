SELECT id, account, island, kind, max_gpus, max_price, demand_since, limit_price, spend_limit,
       spend_window_start, pending_reason
FROM clusters WHERE id = $cluster
