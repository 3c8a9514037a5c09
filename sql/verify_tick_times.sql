-- verify (record/verify.py): the time of every recorded tick of island $island (NULL: every
-- island) in [$start, $end) (NULL: open), what the ticks are shared out among workers by.
SELECT island, time
FROM ticks
WHERE ($island IS NULL OR island = $island)
  AND ($start IS NULL OR time >= $start) AND ($end IS NULL OR time < $end)
ORDER BY island, time
