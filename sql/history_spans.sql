-- Every island with ticks, and the time of its first and latest tick (what there is to export):
-- its first is earlier where a ledger row of the island is (a purchase before its first tick),
-- or a request of the demand journal that is the island's or an account's (the island and its
-- clusters made, their accounts made and funded, before any tick).
WITH ticked AS (
    SELECT island, min(time) AS first, max(time) AS last
    FROM ticks
    GROUP BY island
), billed AS (
    SELECT island, to_timestamp(0) + to_microseconds(min(ts) // 1000) AS first
    FROM ledger
    WHERE island IS NOT NULL
    GROUP BY island
)
SELECT
    t.island,
    least(t.first, b.first, (
        SELECT min(d.time) FROM demand AS d WHERE d.island = t.island OR d.island IS NULL
    )) AS first,
    t.last
FROM ticked AS t
LEFT JOIN billed AS b ON b.island = t.island
ORDER BY t.island
