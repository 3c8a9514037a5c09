SELECT count(*) AS clusters FROM clusters c
WHERE c.island = $island AND (c.max_gpus > 0 OR EXISTS (
    SELECT 1 FROM jobs j WHERE j.cluster = c.id AND j.state IN ('pending', 'running')))
