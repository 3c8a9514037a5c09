SELECT * FROM base_load_blocks WHERE island = $island AND state = 'live' ORDER BY starts_at, id
