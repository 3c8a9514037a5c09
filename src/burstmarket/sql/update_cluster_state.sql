UPDATE clusters SET
    spend_window_start = batch.spend_window_start, pending_reason = batch.pending_reason,
    bid_too_low = batch.bid_too_low
FROM batch
WHERE clusters.id = batch.id
