-- A cluster's base load ledger rows by block and kind (ledger units): what each block billed,
-- and each purchase's deposit, receivable and the wires applied to it.
SELECT block, kind, sum(units)::HUGEINT AS units
FROM ledger
WHERE cluster = $cluster AND block IS NOT NULL
GROUP BY block, kind
ORDER BY block, kind
