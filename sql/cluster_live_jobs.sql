-- jobs of a cluster not yet finished (the limit on jobs per cluster counts these)
SELECT count(*) AS jobs FROM jobs WHERE cluster = $cluster AND state != 'finished'
