-- Credit left per account in ledger units: deposits minus everything billed.
SELECT a.name AS account, COALESCE(-sum(l.units), 0)::HUGEINT AS units
FROM accounts a LEFT JOIN ledger l
  ON l.account = a.name AND l.kind IN ('deposit', 'charge', 'refund', 'hold', 'base_load')
GROUP BY a.name
ORDER BY a.name
