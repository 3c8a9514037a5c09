UPDATE jobs SET state = 'finished', finished_at = $finished_at, node = NULL, reason = NULL
WHERE cluster = $cluster AND name = $name
