-- Record one request that changed the market (store/journal.py), in its change's transaction.
-- The island is the one it names, else its cluster's, else its block's; NULL for an account's.
INSERT INTO demand
SELECT
    nextval('demand_seq'),
    to_timestamp(0) + to_microseconds($time_ns // 1000),
    coalesce(
        $island,
        (SELECT island FROM clusters WHERE id = $cluster),
        (SELECT island FROM base_load_blocks WHERE id = $block)
    ),
    $cluster,
    $method,
    $path,
    $body
