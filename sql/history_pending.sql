-- Export one island's `pending` rows in [$start, $end) to the Parquet file $path, each with its
-- tick's time and interval: the cause's figures from µUSD and market ns to USD and times.
COPY (
    SELECT p.tick, t.time, p.cluster, p.gpus, p.pending_reason,
           CASE WHEN p.pending_detail IS NOT NULL THEN {
               'since': to_timestamp(0) + to_microseconds(p.pending_detail.since // 1000),
               'balance': (p.pending_detail.balance::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'spend_left': (p.pending_detail.spend_left::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'worst_case': (p.pending_detail.worst_case::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'ceiling': (p.pending_detail.ceiling::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'reserve': (p.pending_detail.reserve::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'nodes': p.pending_detail.nodes::INTEGER,
               'market_nodes': p.pending_detail.market_nodes::INTEGER,
               'contestable_at': to_timestamp(0) + to_microseconds(p.pending_detail.contestable_at // 1000),
               'price': (p.pending_detail.price::DECIMAL(18, 0) * 0.000001)::DECIMAL(18, 6),
               'gpus': p.pending_detail.gpus::INTEGER
           } END AS pending_detail,
           t.tick_seconds
    FROM pending AS p
    JOIN ticks AS t ON t.island = p.island AND t.tick = p.tick
    WHERE p.island = $island AND t.time >= $start AND t.time < $end
    ORDER BY t.time, p.tick, p.cluster
) TO $path (FORMAT parquet, COMPRESSION zstd)
