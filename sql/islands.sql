SELECT * FROM islands ORDER BY id
