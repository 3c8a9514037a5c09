-- The oldest tick of $island that `from_tick` may still ask for: the first tick at or after
-- $window_start (the replay window measured back from the latest tick's time).
SELECT coalesce(min(tick), $latest_tick + 1) AS tick
FROM ticks
WHERE island = $island AND time >= $window_start
