-- A change of rate or size: the nodes of block $old (in service or not) go on with block $new.
UPDATE nodes SET block = $new WHERE block = $old
