-- verify (record/verify.py): each island's first tick with a record in `bids` (ticks before it
-- come from before the record was kept), whatever the range checked.
SELECT island, min(tick)
FROM bids
WHERE ($island IS NULL OR island = $island)
GROUP BY island
