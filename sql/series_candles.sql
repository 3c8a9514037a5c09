-- Candles of the per-tick vwap of $island over [$start, $end), $width wide, UTC-aligned.
--
-- Live rows and Parquet history together, never counted twice: the live `ticks` table is the
-- truth for every tick it holds; history adds only the ticks older than its oldest live row
-- (a retention job may trim the live table from the old end; the history holds everything).
-- {history_ticks} is the Parquet files of this island's `ticks` history, or an empty relation.
-- Buckets without ticks are absent. Prices come out as DECIMAL(18,6) USD per GPU-hour.
-- GPU-hours count each tick for its own interval; a history part written before ticks recorded
-- theirs (no tick_seconds) counts the configured one. The candle of $open_bucket, the one the
-- latest tick is in, is still open (`closed` false): later ticks may yet land in it. A candle's
-- reserve price is the one its last tick cleared at, so the chart draws the reserve as it was.
WITH oldest_live AS (
    SELECT coalesce(min(tick), 9223372036854775807) AS tick FROM ticks WHERE island = $island
),
rows AS (
    SELECT tick, time, vwap, min, max, gpus, reserve_price, tick_seconds
    FROM ticks
    WHERE island = $island AND time >= $start AND time < $end
    UNION ALL
    SELECT tick, time, vwap, min, max, gpus, reserve_price, coalesce(tick_seconds, $tick_seconds)
    FROM {history_ticks}
    WHERE time >= $start AND time < $end AND tick < (SELECT tick FROM oldest_live)
)
SELECT
    time_bucket($width, timezone('UTC', time)) AS start,
    arg_min(vwap, tick) FILTER (WHERE vwap IS NOT NULL) AS open,
    max(vwap) AS high,
    min(vwap) AS low,
    arg_max(vwap, tick) FILTER (WHERE vwap IS NOT NULL) AS close,
    CAST(sum(vwap * gpus) / nullif(sum(gpus) FILTER (WHERE vwap IS NOT NULL), 0)
         AS DECIMAL(18, 6)) AS vwap,
    min(min) AS min,
    max(max) AS max,
    arg_max(reserve_price, tick) AS reserve_price,
    CAST(sum(gpus * tick_seconds) / 3600 AS DECIMAL(18, 6)) AS gpu_hours,
    count(*) AS ticks,
    time_bucket($width, timezone('UTC', time)) < $open_bucket AS closed
FROM rows
GROUP BY ALL
ORDER BY start
LIMIT $limit
