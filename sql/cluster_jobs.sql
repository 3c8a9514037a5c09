SELECT * FROM jobs WHERE cluster = $cluster ORDER BY created_at, seq, name
