SELECT * FROM jobs WHERE cluster = $cluster AND name = $name
