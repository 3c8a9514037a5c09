SELECT id, account, island, kind, max_gpus, max_price, demand, limit_price, spend_limit,
       spend_window_start, pending_reason, bid_too_low
FROM clusters WHERE island = $island ORDER BY id
