-- When an account's balance went to or below zero and stayed there (market nanoseconds): the
-- first of its balance rows ($kinds, market/ledger.py BALANCE) after the last one that left it
-- above zero, in the order they were written; its creation when it was never above zero. Read
-- only while the balance is at or below zero.
WITH running AS (
    SELECT ts, row_number() OVER w AS n, -sum(units) OVER w AS balance
    FROM ledger
    WHERE account = $account AND list_contains($kinds, kind)
    WINDOW w AS (ORDER BY ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
above AS (SELECT max(n) AS n FROM running WHERE balance > 0)
SELECT CASE WHEN (SELECT n FROM above) IS NULL
            THEN (SELECT created_at FROM accounts WHERE name = $account)
            ELSE (SELECT min(ts) FROM running WHERE n > (SELECT n FROM above))
       END AS since
