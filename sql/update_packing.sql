UPDATE clusters SET packing = $packing WHERE id = $id
