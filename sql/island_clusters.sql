SELECT * FROM clusters WHERE island = $island ORDER BY id
