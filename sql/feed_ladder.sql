-- The ladder feed: one row per tick of $island in [$from_tick, $to_tick], rungs as a list.
-- A tick with no rung (no contestable node and none under a window) reads as an empty list.
-- `reason` is the code clearing_json.WINDOWS_HOLD gives the live ticks. Times come as the
-- feed spells them (clock.rfc3339: UTC, `Z`, microseconds only when there are any), formatted
-- here: a ladder's thousands of times converted to Python datetimes one by one cost most of a
-- replay's read (measured: 0.45 s of 0.8 s for 256 ticks of 64 rungs).
SELECT
    t.tick,
    t.time,
    t.reserve_price::DOUBLE AS reserve_price,
    coalesce(
        list(
            {
                'nodes': l.nodes,
                'gpus': l.gpus,
                'price_per_gpu_hour': l.price::DOUBLE,
                'contestable_at': strftime(timezone('UTC', l.contestable_at), '%Y-%m-%dT%H:%M:%S')
                    || CASE WHEN epoch_us(l.contestable_at) % 1000000 = 0 THEN ''
                        ELSE strftime(timezone('UTC', l.contestable_at), '.%f') END
                    || 'Z',
                'reason': CASE WHEN l.contestable_at IS NOT NULL
                    THEN 'windows-hold' END,
                'later': list_transform(
                    l.later,
                    lambda x: {
                        'at': strftime(timezone('UTC', x.since), '%Y-%m-%dT%H:%M:%S')
                            || CASE WHEN epoch_us(x.since) % 1000000 = 0 THEN ''
                                ELSE strftime(timezone('UTC', x.since), '.%f') END
                            || 'Z',
                        'price_per_gpu_hour': x.price::DOUBLE
                    }
                )
            }
            ORDER BY l.nodes
        ) FILTER (WHERE l.nodes IS NOT NULL),
        []
    ) AS rungs
FROM ticks AS t
LEFT JOIN ladder AS l ON l.island = t.island AND l.tick = t.tick
WHERE t.island = $island AND t.tick BETWEEN $from_tick AND $to_tick
GROUP BY t.tick, t.time, t.reserve_price
ORDER BY t.tick
