UPDATE clusters SET spend_limit = $spend_limit WHERE id = $id
