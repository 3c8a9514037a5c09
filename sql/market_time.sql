-- The latest market time the store recorded (ns): a manual clock resumes from it.
SELECT greatest(
    (SELECT max(epoch_us(time)) * 1000 FROM ticks),
    (SELECT max(ts) FROM ledger),
    (SELECT max(created_at) FROM islands),
    (SELECT max(created_at) FROM accounts),
    (SELECT max(created_at) FROM clusters),
    (SELECT max(created_at) FROM jobs),
    (SELECT max(ts) FROM job_events)
) AS ns
