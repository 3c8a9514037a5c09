-- VM demand of many clusters at once: what one group commit's declarations set (last one wins).
UPDATE clusters SET max_gpus = batch.max_gpus, max_price = batch.max_price, demand = batch.demand
FROM batch
WHERE clusters.id = batch.id
