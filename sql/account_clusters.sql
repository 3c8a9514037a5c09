SELECT id FROM clusters WHERE account = $account ORDER BY id
