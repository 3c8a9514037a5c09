-- The stats feed: one row per tick of $island in [$from_tick, $to_tick], prices as display floats.
SELECT
    tick,
    time,
    vwap::DOUBLE AS vwap,
    min::DOUBLE AS min,
    max::DOUBLE AS max,
    gpus,
    clusters,
    pending_gpus,
    reserve_price::DOUBLE AS reserve_price
FROM ticks
WHERE island = $island AND tick BETWEEN $from_tick AND $to_tick
ORDER BY tick
