SELECT * FROM base_load_blocks WHERE id = $id
