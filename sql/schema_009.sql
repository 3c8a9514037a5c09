-- Schema 9: why demand waits (docs/market.md "Why it waits"), kept with the rows the tick
-- writes, never recomputed per request.
--
-- clusters.pending_reason:  now any cause in the order named (billing-hold, spend-limit,
--                           bid-too-low, PackingDisabled, ReservedBusy, ReservedTooSmall,
--                           no-supply, windows, outbid), not only the two refusals.
-- clusters.pending_detail:  that cause's figures, each member NULL unless the cause sets it:
--                           µUSD (per GPU-hour for a price), market ns, node and GPU counts.
-- jobs.pending_reason, pending_detail: the same, for each pending job.
ALTER TABLE clusters ADD COLUMN pending_detail STRUCT(
    since BIGINT, balance BIGINT, spend_left BIGINT, worst_case BIGINT, ceiling BIGINT,
    reserve BIGINT, nodes BIGINT, market_nodes BIGINT, contestable_at BIGINT, price BIGINT,
    gpus BIGINT
);

ALTER TABLE jobs ADD COLUMN pending_reason VARCHAR;
ALTER TABLE jobs ADD COLUMN pending_detail STRUCT(
    since BIGINT, balance BIGINT, spend_left BIGINT, worst_case BIGINT, ceiling BIGINT,
    reserve BIGINT, nodes BIGINT, market_nodes BIGINT, contestable_at BIGINT, price BIGINT,
    gpus BIGINT
);
