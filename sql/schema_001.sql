-- Schema 1 of the market store. Money in state tables is integer µUSD (prices per GPU-hour);
-- times in state tables are integer ns since the epoch (UTC); the market-data tables read by
-- the feed and the Parquet history use TIMESTAMPTZ and DECIMAL(18,6) USD.
-- The ledger is append-only: amounts are exact integers in ledger units (µUSD per hour × ms,
-- 3.6e12 per USD), positive = owed by the account; corrections are new rows.

CREATE TABLE islands (
    id            VARCHAR PRIMARY KEY,
    gpus_per_node INTEGER NOT NULL,
    nodes         INTEGER NOT NULL,
    reserve_price BIGINT  NOT NULL,
    node_spec     VARCHAR,
    created_at    BIGINT  NOT NULL
);

CREATE TABLE accounts (
    name       VARCHAR PRIMARY KEY,
    created_at BIGINT  NOT NULL
);

CREATE TABLE clusters (
    id                 VARCHAR PRIMARY KEY,
    account            VARCHAR NOT NULL,
    island             VARCHAR NOT NULL,
    kind               VARCHAR NOT NULL,
    token_hash         VARCHAR NOT NULL,
    created_at         BIGINT  NOT NULL,
    max_gpus           INTEGER NOT NULL DEFAULT 0,
    max_price          BIGINT,
    demand_since       BIGINT  NOT NULL DEFAULT 0,
    limit_price        BIGINT,
    spend_limit        BIGINT,
    spend_window_start BIGINT,
    pending_reason     VARCHAR
);

CREATE TABLE nodes (
    island         VARCHAR NOT NULL,
    id             VARCHAR NOT NULL,
    idx            INTEGER NOT NULL,
    cluster        VARCHAR,
    job            VARCHAR,
    granted_at     BIGINT,
    window_ends_at BIGINT,
    hold_until     BIGINT,
    idle_since     BIGINT,
    locked_price   BIGINT,
    commit_price   BIGINT,
    commit_ends_at BIGINT,
    PRIMARY KEY (island, id)
);

CREATE TABLE jobs (
    cluster        VARCHAR NOT NULL,
    name           VARCHAR NOT NULL,
    nodes          INTEGER NOT NULL,
    priority_class VARCHAR,
    limit_price    BIGINT,
    state          VARCHAR NOT NULL,
    created_at     BIGINT  NOT NULL,
    provisioned_at BIGINT,
    gang_price     BIGINT,
    finished_at    BIGINT,
    bid_too_low    BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (cluster, name)
);

CREATE TABLE job_events (
    cluster VARCHAR NOT NULL,
    job     VARCHAR NOT NULL,
    ts      BIGINT  NOT NULL,
    type    VARCHAR NOT NULL,
    detail  VARCHAR NOT NULL
);

CREATE SEQUENCE ledger_id;

CREATE TABLE ledger (
    id           BIGINT  NOT NULL DEFAULT nextval('ledger_id'),
    ts           BIGINT  NOT NULL,
    account      VARCHAR NOT NULL,
    cluster      VARCHAR,
    island       VARCHAR,
    tick         BIGINT,
    kind         VARCHAR NOT NULL,  -- deposit | charge | refund | hold | commitment | release
    node         VARCHAR,
    period_start BIGINT,
    period_end   BIGINT,
    gpus         INTEGER NOT NULL,
    gpu_ms       BIGINT  NOT NULL,
    rate         BIGINT,
    units        HUGEINT NOT NULL
);

CREATE TABLE ticks (
    island        VARCHAR NOT NULL,
    tick          BIGINT NOT NULL,
    time          TIMESTAMPTZ NOT NULL,
    vwap          DECIMAL(18, 6),
    min           DECIMAL(18, 6),
    max           DECIMAL(18, 6),
    gpus          INTEGER NOT NULL,
    clusters      INTEGER NOT NULL,
    pending_gpus  INTEGER NOT NULL,
    reserve_price DECIMAL(18, 6) NOT NULL,
    PRIMARY KEY (island, tick)
);

CREATE TABLE cluster_rates (
    island     VARCHAR NOT NULL,
    tick       BIGINT NOT NULL,
    time       TIMESTAMPTZ NOT NULL,
    cluster    VARCHAR NOT NULL,
    gpus       INTEGER NOT NULL,
    rate       DECIMAL(18, 6) NOT NULL,
    amount_usd DECIMAL(18, 6) NOT NULL
);

CREATE TABLE allocations (
    island  VARCHAR NOT NULL,
    tick    BIGINT NOT NULL,
    time    TIMESTAMPTZ NOT NULL,
    cluster VARCHAR NOT NULL,
    node    VARCHAR NOT NULL,
    kind    VARCHAR NOT NULL
);

CREATE TABLE ladder (
    island VARCHAR NOT NULL,
    tick   BIGINT NOT NULL,
    time   TIMESTAMPTZ NOT NULL,
    nodes  INTEGER NOT NULL,
    gpus   INTEGER NOT NULL,
    price  DECIMAL(18, 6) NOT NULL
);

CREATE TABLE verdicts (
    island  VARCHAR NOT NULL,
    tick    BIGINT NOT NULL,
    cluster VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL  -- bid-too-low | spend-limit | billing-hold
);
