-- Every column of every table of the store, as DuckDB types it (checked against store/table.py).
SELECT table_name, column_name, data_type, is_nullable
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
ORDER BY table_name, column_index
