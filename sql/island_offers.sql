-- An island's posted base load offer grid, by size then term.
SELECT * FROM base_load_offers WHERE island = $island ORDER BY size_gpus, term_hours
