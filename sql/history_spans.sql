-- Every island with ticks, and the time of its first and latest tick (what there is to export).
SELECT island, min(time) AS first, max(time) AS last
FROM ticks
GROUP BY island
ORDER BY island
