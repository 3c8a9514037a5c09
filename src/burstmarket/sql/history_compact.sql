-- Merge Parquet parts of one table into the file $path. Every export orders rows by time first,
-- and the leading column `tick` grows with time within an island, so ORDER BY ALL keeps the merged
-- file sorted by time (and fully deterministic).
COPY (
    SELECT * FROM read_parquet($files, hive_partitioning = false)
    ORDER BY ALL
) TO $path (FORMAT parquet, COMPRESSION zstd)
