-- The nodes a cluster's job runs on, out of service ones too.
SELECT * FROM nodes WHERE cluster = $cluster AND job = $job ORDER BY idx
