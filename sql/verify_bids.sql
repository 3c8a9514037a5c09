-- verify (record/verify.py): every part of the recorded auctions (market/auction_record.py
-- reads them back), prices as integer µUSD, times as market ns.
SELECT island, tick, auction, part, cluster, unit, nodes, CAST(price * 1000000 AS BIGINT) AS price,
       age, epoch_us(ends_at) * 1000 AS ends_at, locked_by_clearing, gpus_per_node
FROM bids
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick
