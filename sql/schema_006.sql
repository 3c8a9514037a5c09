-- Schema 6: base load as a product tenants buy (docs/market.md "Base load").
--
-- islands.buying_open:       tenants may buy the island's posted cells themselves (else the
--                            account team arranges every block).
-- base_load_offers:          the island's posted offer grid, one row per cell: a size in GPUs
--                            (whole nodes) for a term in whole hours, at `rate` µUSD per
--                            GPU-hour; a NULL rate is a cell posted without a rate (sold out).
-- clusters.packing:          jobs smaller than one node may be packed onto the cluster's block.
-- base_load_blocks.origin:   'purchase' (bought by the tenant at a posted cell) or
--                            'account-team' (made by the operator directly).
-- base_load_blocks.purchase: the block whose security deposit and receivable this one carries:
--                            itself, or the block a change of rate or size continued.
-- base_load_blocks.owed_by:  the purchase's receivable is due before this time (NULL: none).
-- base_load_blocks.notes:    the account team's notes, changed in place.
-- ledger.block:              the block a base load row bills, or the purchase a security
--                            deposit, its return, a receivable or a wire belongs to.
-- jobs.pods, gpus_per_pod:   a job of pods smaller than one node (NULL: whole-node pods, `nodes`).
-- jobs.node:                 the block node such a job runs on.
-- jobs.reason:               why a waiting job waits (ReservedTooSmall, ReservedBusy, ...).
ALTER TABLE islands ADD COLUMN buying_open BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE base_load_offers (
    island     VARCHAR NOT NULL,
    size_gpus  INTEGER NOT NULL,
    term_hours INTEGER NOT NULL,
    rate       BIGINT,
    PRIMARY KEY (island, size_gpus, term_hours)
);

ALTER TABLE clusters ADD COLUMN packing BOOLEAN NOT NULL DEFAULT false;

ALTER TABLE base_load_blocks ADD COLUMN origin VARCHAR NOT NULL DEFAULT 'account-team';
ALTER TABLE base_load_blocks ADD COLUMN purchase VARCHAR NOT NULL DEFAULT '';
UPDATE base_load_blocks SET purchase = id;
ALTER TABLE base_load_blocks ADD COLUMN owed_by BIGINT;
ALTER TABLE base_load_blocks ADD COLUMN notes VARCHAR;

ALTER TABLE ledger ADD COLUMN block VARCHAR;
-- base load rows written before: the cluster's block whose term held the row's period
UPDATE ledger SET block = b.id
FROM base_load_blocks b
WHERE ledger.kind = 'base_load' AND b.cluster = ledger.cluster
  AND ledger.period_start >= b.starts_at AND ledger.period_start < b.ends_at;

ALTER TABLE jobs ADD COLUMN pods INTEGER;
ALTER TABLE jobs ADD COLUMN gpus_per_pod INTEGER;
ALTER TABLE jobs ADD COLUMN node VARCHAR;
ALTER TABLE jobs ADD COLUMN reason VARCHAR;
