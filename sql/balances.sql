-- Credit left per account in ledger units: the negated sum of its rows of the kinds in the
-- balance ($kinds, market/ledger.py BALANCE): credits and wires in, billing and deposits out.
SELECT a.name AS account, COALESCE(-sum(l.units), 0)::HUGEINT AS units
FROM accounts a LEFT JOIN ledger l
  ON l.account = a.name AND list_contains($kinds, l.kind)
GROUP BY a.name
ORDER BY a.name
