-- `burstmarket replay` (feed/replay.py): every recorded tick, in the order they are replayed:
-- by market time, islands that ticked at the same time by id.
SELECT island, tick, time
FROM ticks
ORDER BY time, island, tick
