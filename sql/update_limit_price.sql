UPDATE clusters SET limit_price = $limit_price WHERE id = $id
