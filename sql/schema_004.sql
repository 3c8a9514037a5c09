-- Schema 4: market data that explains itself (docs/history.md).
--
-- ticks.tick_seconds:    the market time one tick stands for, its billed interval
--                        [time, time + tick_seconds): GPU-hours of a tick are gpus × tick_seconds
--                        / 3600, whatever interval the market ran at.
-- ladder.contestable_at: NULL for a rung this tick's auction could give; otherwise the earliest
--                        time enough protection windows end for it to be contested.
ALTER TABLE ticks ADD COLUMN tick_seconds DECIMAL(12, 3);
ALTER TABLE ladder ADD COLUMN contestable_at TIMESTAMPTZ;

-- Ticks written before: a tick that billed anyone says its interval in its charges' periods.
UPDATE ticks SET tick_seconds = billed.seconds
FROM (
    SELECT island, tick, CAST(max(period_end - period_start) // 1000000 AS DECIMAL(12, 3)) / 1000
        AS seconds
    FROM ledger
    WHERE kind = 'charge'
    GROUP BY island, tick
) AS billed
WHERE ticks.island = billed.island AND ticks.tick = billed.tick;
-- One that billed nobody held no GPUs, so any interval gives it zero GPU-hours: it takes its
-- island's most common one (the default 10 s on an island that never billed).
UPDATE ticks SET tick_seconds = coalesce(
    (SELECT mode(t.tick_seconds) FROM ticks AS t WHERE t.island = ticks.island), 10)
WHERE tick_seconds IS NULL;
