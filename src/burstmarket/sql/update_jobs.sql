UPDATE jobs SET
    state = batch.state, provisioned_at = batch.provisioned_at,
    gang_price = batch.gang_price, bid_too_low = batch.bid_too_low
FROM batch
WHERE jobs.cluster = batch.cluster AND jobs.name = batch.name
