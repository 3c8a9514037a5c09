-- Every cluster's token hash, read once at start (the API authenticates from memory).
SELECT token_hash, id FROM clusters
