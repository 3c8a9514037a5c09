SELECT island, max(tick) AS tick, arg_max(epoch_us(time), tick) AS time_us
FROM ticks GROUP BY island ORDER BY island
