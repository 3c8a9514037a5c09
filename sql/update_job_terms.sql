UPDATE jobs SET limit_price = $limit_price, priority_class = $priority_class
WHERE cluster = $cluster AND name = $name
