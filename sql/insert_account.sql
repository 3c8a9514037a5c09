INSERT INTO accounts (name, created_at) VALUES ($name, $created_at)
