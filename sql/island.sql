SELECT * FROM islands WHERE id = $island
