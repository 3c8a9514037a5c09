-- Schema 10: why demand waited, tick by tick (docs/history.md "The ledger, verdicts and
-- pending"): the clusters' rows keep only the latest cause, so each tick also appends one row
-- per cluster whose demand waits after it, in the tick's transaction.
--
-- pending.gpus:           the GPUs the cluster asks for and does not hold after the tick.
-- pending.pending_reason, pending_detail: the cause and its figures, as the cluster's row
--                         kept them at that tick (schema 9); NULL when no cause holds.
CREATE TABLE pending (
    island         VARCHAR NOT NULL,
    tick           BIGINT NOT NULL,
    cluster        VARCHAR NOT NULL,
    gpus           INTEGER NOT NULL,
    pending_reason VARCHAR,
    pending_detail STRUCT(
        since BIGINT, balance BIGINT, spend_left BIGINT, worst_case BIGINT, ceiling BIGINT,
        reserve BIGINT, nodes BIGINT, market_nodes BIGINT, contestable_at BIGINT, price BIGINT,
        gpus BIGINT
    )
);
