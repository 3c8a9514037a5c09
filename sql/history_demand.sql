-- Export one island's `demand` rows in [$start, $end) to the Parquet file $path, in the order
-- the market took them: those of its clusters and of the island itself, and those of accounts
-- (no island), which are in every island's files. Columns as history/dictionary.py describes.
COPY (
    SELECT seq, time, cluster, method, path, body
    FROM demand
    WHERE (island = $island OR island IS NULL) AND time >= $start AND time < $end
    ORDER BY seq
) TO $path (FORMAT parquet, COMPRESSION zstd)
