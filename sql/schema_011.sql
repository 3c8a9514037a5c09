-- Schema 11: the record (docs/history.md "The record"): what each tick's auctions used, so the
-- engine runs them again from the history alone, and the islands as the ticks ran them.
--
-- bids: per tick, one row per part of the auction it cleared (auction 'now') and of the one
--       its ladders priced (auction 'next'): 'supply' (contestable nodes, the reserve in
--       `price`, gpus_per_node), 'unit' (a unit that bid: cluster, unit id, nodes, price, its
--       place in the age order), 'protected' (nodes fixed under a window at their cap),
--       'step_down' (nodes stepping down from a block at their lock; locked_by_clearing when
--       the tick locked them at its lowest rate), and for 'next' 'release' (nodes whose windows
--       end at `ends_at`) and 'release_unit' (a unit their holders bid then). Prices USD per GPU-hour,
--       exact to the µUSD, as the other market-data tables.
-- island_terms: an island's terms, one row from the first tick that ran on them (written by
--       the tick when they differ from the island's last row).
CREATE TABLE bids (
    island             VARCHAR NOT NULL,
    tick               BIGINT NOT NULL,
    time               TIMESTAMPTZ NOT NULL,
    auction            VARCHAR NOT NULL,
    part               VARCHAR NOT NULL,
    cluster            VARCHAR,
    unit               VARCHAR,
    nodes              INTEGER NOT NULL,
    price              DECIMAL(18, 6),
    age                INTEGER,
    ends_at            TIMESTAMPTZ,
    locked_by_clearing BOOLEAN,
    gpus_per_node      INTEGER
);

CREATE TABLE island_terms (
    island        VARCHAR NOT NULL,
    tick          BIGINT NOT NULL,
    time          TIMESTAMPTZ NOT NULL,
    gpus_per_node INTEGER NOT NULL,
    nodes         INTEGER NOT NULL,
    node_spec     VARCHAR,
    reserve_price DECIMAL(18, 6) NOT NULL
);
