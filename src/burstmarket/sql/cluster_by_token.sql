SELECT id FROM clusters WHERE token_hash = $token_hash
