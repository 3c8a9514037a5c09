-- Schema 2: operator node states, owed replacements, base load blocks (docs/market.md
-- "Nodes out of service", "Base load").
--
-- nodes.service:    NULL in service | 'cordoned' (operator health check) | 'dark' (kubelet lost).
--                   An out-of-service node keeps its cluster (it stays with it, unbilled) until
--                   an operator uncordons it.
-- nodes.owed_until: on an out-of-service node, the end of the window its cluster is owed a
--                   replacement for (NULL: nothing owed, or the replacement was delivered).
-- nodes.block:      the base load block that holds the node (never contestable, never billed by
--                   the market).
ALTER TABLE nodes ADD COLUMN service VARCHAR;
ALTER TABLE nodes ADD COLUMN owed_until BIGINT;
ALTER TABLE nodes ADD COLUMN block VARCHAR;

-- How many nodes base load blocks may reserve on the island (0: none).
ALTER TABLE islands ADD COLUMN base_load_cap INTEGER NOT NULL DEFAULT 0;

-- Base load blocks: fixed nodes, fixed term, fixed rate (µUSD per GPU-hour), one live block per
-- cluster. billed_until: the end of the last 5-minute step billed (steps bill as they start).
-- negative_since: when the account's balance was first seen at or below zero (24 h cancels).
CREATE TABLE base_load_blocks (
    id             VARCHAR PRIMARY KEY,
    cluster        VARCHAR NOT NULL,
    island         VARCHAR NOT NULL,
    nodes          INTEGER NOT NULL,
    rate           BIGINT  NOT NULL,
    starts_at      BIGINT  NOT NULL,
    ends_at        BIGINT  NOT NULL,
    state          VARCHAR NOT NULL,  -- live | ended | cancelled
    ended_at       BIGINT,
    billed_until   BIGINT  NOT NULL,
    negative_since BIGINT
);
