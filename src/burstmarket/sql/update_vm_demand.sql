UPDATE clusters SET max_gpus = $max_gpus, max_price = $max_price, demand_since = $demand_since
WHERE id = $id
