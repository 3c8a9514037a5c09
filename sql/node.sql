SELECT * FROM nodes WHERE island = $island AND id = $node
