-- The rows of some Parquet history parts with $start <= time < $end, into the Parquet file $path,
-- sorted as the history itself is (`burstmarket export`); by name, as history_compact.sql.
COPY (
    SELECT * FROM read_parquet($files, hive_partitioning = false, union_by_name = true)
    WHERE time >= $start AND time < $end
    ORDER BY ALL
) TO $path (FORMAT parquet, COMPRESSION zstd)
