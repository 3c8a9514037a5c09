SELECT id, island FROM clusters WHERE account = $account ORDER BY id
