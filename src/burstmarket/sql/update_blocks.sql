UPDATE base_load_blocks SET
    state = batch.state, ended_at = batch.ended_at, billed_until = batch.billed_until,
    negative_since = batch.negative_since
FROM batch
WHERE base_load_blocks.id = batch.id
