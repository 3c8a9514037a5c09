-- Schema 7: receipts, why each cluster paid what a tick billed it (docs/market.md "Receipts").
--
-- One row per tick and cluster holding market nodes, written with the tick's other rows.
-- amount:           the tick's charge for its interval, ledger units (rate × GPUs × ms).
-- reserve, displaced, core, protected: the parts of `amount`, ledger units, adding up to it
--                   exactly (the rate's rounding in the largest part, market/receipts.py).
-- displaced_levels: the demand of other clusters its won nodes keep out, as price levels
--                   (µUSD per GPU-hour) × nodes; negative nodes: demand that would give way.
-- coalition:        the blocking coalition that required the core's addition, as the same
--                   levels; NULL when the core added nothing. coalition_value: what it offers
--                   over the reserve, µUSD per hour.
-- protected_levels: what its protected nodes keep out; capped: the locked price capped them.
-- Never another cluster's id, account or name: only price levels and node counts.
CREATE TABLE receipts (
    island           VARCHAR NOT NULL,
    tick             BIGINT NOT NULL,
    time             TIMESTAMPTZ NOT NULL,
    cluster          VARCHAR NOT NULL,
    nodes            INTEGER NOT NULL,
    gpus             INTEGER NOT NULL,
    rate             DECIMAL(18, 6) NOT NULL,
    amount           HUGEINT NOT NULL,
    reserve          HUGEINT NOT NULL,
    displaced        HUGEINT NOT NULL,
    core             HUGEINT NOT NULL,
    protected        HUGEINT NOT NULL,
    displaced_levels STRUCT(price BIGINT, nodes INTEGER)[] NOT NULL,
    coalition        STRUCT(price BIGINT, nodes INTEGER)[],
    coalition_value  BIGINT,
    protected_levels STRUCT(price BIGINT, nodes INTEGER)[] NOT NULL,
    capped           BOOLEAN NOT NULL
);
