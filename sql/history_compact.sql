-- Merge Parquet parts of one table into the file $path. Every export orders rows by time first,
-- and the leading column `tick` grows with time within an island (the ledger's leads with `time`
-- itself), so ORDER BY ALL keeps the merged file sorted by time (and fully deterministic). By name: parts written before a column was added
-- (tick_seconds, contestable_at, the ladder's later) merge with newer ones, the old rows reading NULL there.
COPY (
    SELECT * FROM read_parquet($files, hive_partitioning = false, union_by_name = true)
    ORDER BY ALL
) TO $path (FORMAT parquet, COMPRESSION zstd)
