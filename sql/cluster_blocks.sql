SELECT * FROM base_load_blocks WHERE cluster = $cluster ORDER BY starts_at DESC, id DESC
