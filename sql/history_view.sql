-- A view of one history table over its Parquet files (history/views.py): {table} its name,
-- {files} the quoted glob of its files. The partitions come back as `island` and `month`; by
-- name, so parts written before a column was added read NULL there.
CREATE OR REPLACE VIEW "{table}" AS
SELECT * FROM read_parquet({files}, hive_partitioning = true, union_by_name = true)
