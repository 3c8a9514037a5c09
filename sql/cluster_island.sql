-- A cluster's row and its island's, as two structs of every column (one read for what every
-- tenant request starts from).
SELECT c, i FROM clusters AS c JOIN islands AS i ON i.id = c.island WHERE c.id = $cluster
