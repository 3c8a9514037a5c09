INSERT INTO cluster_rates BY NAME SELECT * FROM batch
