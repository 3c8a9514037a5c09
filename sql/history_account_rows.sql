-- The market time of the first ledger row of no island (an account's deposit, a wire), if any:
-- where the history of those rows starts.
SELECT to_timestamp(0) + to_microseconds(min(ts) // 1000) AS first
FROM ledger
WHERE island IS NULL
