-- One cluster's row, every column (market/tables.py maps the ones a Cluster has).
SELECT * FROM clusters WHERE id = $cluster
