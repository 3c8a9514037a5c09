-- Schema 3: the age of demand, contiguous billing, verdicts that log (docs/market.md "Demand",
-- "Billing", "Refusals").
--
-- clusters.demand:      a VM cluster's declared units as tranches, oldest first: `nodes` units first
--                       declared at `since`, accepted as the `seq`-th write of demand. Growing a
--                       declaration appends a tranche; lowering it trims the youngest units first.
--                       It replaces demand_since, which dated every unit by the last growth.
-- clusters.bid_too_low: the cluster's bid-too-low verdict at its island's last tick (a new verdict
--                       logs one REFUSED line).
-- jobs.seq:             the order the market accepted the job (ties of equal `created_at`).
-- nodes.billed_until:   set only while a market node is out of step with its island's billing
--                       (returned by an uncordon): billing resumes from it. NULL: billed up to the
--                       end of the interval its island's last tick billed.
ALTER TABLE clusters ADD COLUMN demand STRUCT(nodes INTEGER, since BIGINT, seq BIGINT)[]
    NOT NULL DEFAULT [];
UPDATE clusters SET demand = [{'nodes': clusters.max_gpus // i.gpus_per_node,
                               'since': clusters.demand_since, 'seq': 0}]
FROM islands i
WHERE i.id = clusters.island AND clusters.kind = 'vm' AND clusters.max_gpus > 0;
ALTER TABLE clusters DROP COLUMN demand_since;
ALTER TABLE clusters ADD COLUMN bid_too_low BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE nodes ADD COLUMN billed_until BIGINT;
