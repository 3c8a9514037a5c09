INSERT INTO clusters (id, account, island, kind, token_hash, created_at)
VALUES ($id, $account, $island, $kind, $token_hash, $created_at)
