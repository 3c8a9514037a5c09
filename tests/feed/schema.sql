-- The market-data tables exactly as the service's store creates them (its CREATE TABLE statements
-- are the service's; this copy lets the feed's tests run against a real DuckDB file on their own).
CREATE TABLE ticks(island VARCHAR, tick BIGINT, time TIMESTAMPTZ, vwap DECIMAL(18,6) NULL,
    min DECIMAL(18,6) NULL, max DECIMAL(18,6) NULL, gpus INTEGER, clusters INTEGER,
    pending_gpus INTEGER, reserve_price DECIMAL(18,6), tick_seconds DECIMAL(12,3),
    PRIMARY KEY(island, tick));
CREATE TABLE cluster_rates(island VARCHAR, tick BIGINT, time TIMESTAMPTZ, cluster VARCHAR,
    gpus INTEGER, rate DECIMAL(18,6), amount_usd DECIMAL(18,6));
CREATE TABLE allocations(island VARCHAR, tick BIGINT, time TIMESTAMPTZ, cluster VARCHAR,
    node VARCHAR, kind VARCHAR);
CREATE TABLE ladder(island VARCHAR, tick BIGINT, time TIMESTAMPTZ, nodes INTEGER, gpus INTEGER,
    price DECIMAL(18,6), contestable_at TIMESTAMPTZ);
