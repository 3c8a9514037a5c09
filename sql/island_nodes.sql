SELECT * FROM nodes WHERE island = $island ORDER BY idx
