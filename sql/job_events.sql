SELECT job, ts, type, detail FROM job_events WHERE cluster = $cluster ORDER BY ts, rowid
