UPDATE nodes SET
    cluster = batch.cluster, job = batch.job, granted_at = batch.granted_at,
    window_ends_at = batch.window_ends_at, hold_until = batch.hold_until,
    idle_since = batch.idle_since, locked_price = batch.locked_price,
    commit_price = batch.commit_price, commit_ends_at = batch.commit_ends_at,
    service = batch.service, owed_until = batch.owed_until, block = batch.block,
    billed_until = batch.billed_until
FROM batch
WHERE nodes.island = batch.island AND nodes.id = batch.id
