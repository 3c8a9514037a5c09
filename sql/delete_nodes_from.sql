DELETE FROM nodes WHERE island = $island AND idx >= $idx
