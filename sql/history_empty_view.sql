-- The view of a history table with no file yet (history/views.py): {table} its name, {columns}
-- its columns as typed NULLs, so a query of it finds no rows rather than failing.
CREATE OR REPLACE VIEW "{table}" AS SELECT {columns} WHERE false
