-- The events of one job of a cluster ($job), or of all its jobs ($job NULL), oldest first.
SELECT job, ts, type, detail FROM job_events
WHERE cluster = $cluster AND ($job IS NULL OR job = $job)
ORDER BY ts, rowid
