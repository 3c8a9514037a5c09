-- Schema 12: the demand journal (docs/history.md "demand"): every request that changed the
-- market, written in the transaction of its change, in the order the market took them, so a
-- backtest (burstmarket backtest) can place everyone's demand again at its market time.
--
-- seq:     the order the changes committed in (from demand_seq; a rolled-back one leaves a gap)
-- time:    market time of the change
-- island:  the island it concerns; NULL for an account's (accounts, credits, wires)
-- cluster: the cluster it acts for (a tenant's token) or names (an operator's request)
-- method, path, body: the request as sent (body as JSON text, '' for none)
CREATE SEQUENCE demand_seq START 1;
CREATE TABLE demand (
    seq BIGINT NOT NULL,
    time TIMESTAMP WITH TIME ZONE NOT NULL,
    island VARCHAR,
    cluster VARCHAR,
    method VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    body VARCHAR NOT NULL
);
