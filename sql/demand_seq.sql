-- The last order of acceptance given to demand (VM tranches and Kubernetes jobs).
SELECT greatest(
    (SELECT coalesce(max(seq), 0) FROM jobs),
    (SELECT coalesce(max(t.d.seq), 0) FROM (SELECT unnest(demand) AS d FROM clusters) t)
) AS seq
