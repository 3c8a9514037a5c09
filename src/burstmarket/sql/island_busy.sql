SELECT count(cluster) AS held, max(CASE WHEN cluster IS NOT NULL THEN idx END) AS highest_held
FROM nodes WHERE island = $island
