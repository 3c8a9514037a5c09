-- What the base load purchases $purchases still hold of their security deposit and still owe of
-- their receivable, in ledger units (docs/market.md "Buying"): deposits taken less returned,
-- receivables opened less wires applied and less what was closed unpaid.
SELECT block AS purchase,
       COALESCE(sum(units) FILTER (WHERE kind IN ('security_deposit', 'deposit_return')), 0)
           ::HUGEINT AS deposit_held,
       COALESCE(sum(units) FILTER (WHERE kind IN ('receivable', 'wire')), 0)::HUGEINT AS owed
FROM ledger
WHERE list_contains($purchases, block)
GROUP BY block
ORDER BY block
