UPDATE jobs SET state = 'finished', finished_at = $finished_at
WHERE cluster = $cluster AND name = $name
