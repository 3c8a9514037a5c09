-- Every island that has ticked, with its latest tick and that tick's time.
SELECT island, max(tick) AS tick, arg_max(time, tick) AS time
FROM ticks
GROUP BY island
ORDER BY island
