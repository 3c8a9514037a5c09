-- An island's offer grid is replaced as a whole.
DELETE FROM base_load_offers WHERE island = $island
