-- Every island with ticks, and the time of its first and latest tick (what there is to export);
-- `first` is earlier when demand reached the market before the island's first tick (its
-- clusters, its accounts made before any tick): the history starts with that.
SELECT
    t.island,
    least(min(t.time), (
        SELECT min(d.time) FROM demand AS d WHERE d.island = t.island OR d.island IS NULL
    )) AS first,
    max(t.time) AS last
FROM ticks AS t
GROUP BY t.island
ORDER BY t.island
