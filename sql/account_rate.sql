-- What an account is billed per hour now, in µUSD: rate × GPUs of its billed rows whose period
-- holds the instant of their island ($islands, $instants: the moment that island's last tick
-- billed up to, at most now; $now for an island not listed). Those are the market intervals
-- billed in advance with the refunds of nodes given back inside them, and the base load steps
-- (docs/market.md "Billing"); a minimum hold, billed once when a node goes, is no rate.
SELECT COALESCE(sum(rate::HUGEINT * gpus), 0)::HUGEINT AS micros_per_hour
FROM (
    SELECT rate, gpus, period_start, period_end,
           COALESCE(list_extract($instants, list_position($islands, island)), $now) AS instant
    FROM ledger
    WHERE account = $account AND kind IN ('charge', 'refund', 'base_load')
      AND period_end > $since
)
WHERE period_start <= instant AND instant < period_end
