-- An account's base load purchases that still owe something by wire, the earliest due first:
-- what each owes, when it is due, and the security deposit it still holds (ledger units).
SELECT l.block AS purchase, any_value(l.cluster) AS cluster, b.owed_by,
       sum(l.units) FILTER (WHERE l.kind IN ('receivable', 'wire'))::HUGEINT AS owed,
       COALESCE(sum(l.units) FILTER (WHERE l.kind IN ('security_deposit', 'deposit_return')), 0)
           ::HUGEINT AS deposit
FROM ledger l JOIN base_load_blocks b ON b.id = l.block
WHERE l.account = $account
  AND l.kind IN ('receivable', 'wire', 'security_deposit', 'deposit_return')
GROUP BY l.block, b.owed_by
HAVING sum(l.units) FILTER (WHERE l.kind IN ('receivable', 'wire')) > 0
ORDER BY b.owed_by, l.block
