-- The rates feed: per tick of $island in [$from_tick, $to_tick], every market cluster's GPUs and
-- rate, highest rate first, without the cluster's name.
SELECT
    t.tick,
    t.time,
    coalesce(
        list({'gpus': r.gpus, 'rate': r.rate::DOUBLE} ORDER BY r.rate DESC, r.gpus DESC)
            FILTER (WHERE r.cluster IS NOT NULL),
        []
    ) AS rates
FROM ticks AS t
LEFT JOIN cluster_rates AS r ON r.island = t.island AND r.tick = t.tick
WHERE t.island = $island AND t.tick BETWEEN $from_tick AND $to_tick
GROUP BY t.tick, t.time
ORDER BY t.tick
