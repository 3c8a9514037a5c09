SELECT name FROM accounts WHERE name = $name
