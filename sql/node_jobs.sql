-- Jobs smaller than one node still running on $node, but the job $cluster/$name.
SELECT count(*) AS jobs FROM jobs
WHERE node = $node AND state = 'running' AND NOT (cluster = $cluster AND name = $name)
