-- verify (record/verify.py): each island's recorded terms, from the first tick that ran on them
-- (all of them, whatever the range: the terms in force at its first tick may be older).
SELECT island, tick, gpus_per_node, CAST(reserve_price * 1000000 AS BIGINT)
FROM islands
WHERE ($island IS NULL OR island = $island)
ORDER BY island, tick
