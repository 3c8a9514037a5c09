INSERT INTO allocations BY NAME SELECT * FROM batch
