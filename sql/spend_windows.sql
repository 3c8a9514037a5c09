-- Every cluster's spend window as the store holds it: its start and the units billed since, of
-- the $kinds a window sums (market/ledger.py SPENT). Read once, at start; the market keeps both
-- in memory from then on (market/figures.py).
SELECT c.id AS cluster, c.spend_window_start AS since, COALESCE(sum(l.units), 0)::HUGEINT AS units
FROM clusters c
LEFT JOIN ledger l
  ON l.cluster = c.id AND l.ts >= c.spend_window_start AND list_contains($kinds, l.kind)
WHERE c.spend_window_start IS NOT NULL
GROUP BY c.id, c.spend_window_start
ORDER BY c.id
