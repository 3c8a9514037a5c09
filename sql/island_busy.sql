-- Nodes held or out of service (an island never shrinks below the highest of them).
SELECT count(*) FILTER (WHERE cluster IS NOT NULL OR service IS NOT NULL) AS held,
       max(CASE WHEN cluster IS NOT NULL OR service IS NOT NULL THEN idx END) AS highest_held
FROM nodes WHERE island = $island
