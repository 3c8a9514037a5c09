-- verify (record/verify.py), over the history's views: the recorded statistics of island
-- $island (NULL: every island) in [$start, $end) (NULL: open); money as integer µUSD, times
-- as market ns, what the engine works in.
SELECT island, tick, epoch_us(time) * 1000 AS time_ns,
       CAST(vwap * 1000000 AS BIGINT), CAST(min * 1000000 AS BIGINT),
       CAST(max * 1000000 AS BIGINT), gpus, clusters, CAST(reserve_price * 1000000 AS BIGINT),
       CAST(tick_seconds * 1000 AS BIGINT) AS tick_ms
FROM ticks
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, tick
