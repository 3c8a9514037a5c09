"""A tick's auctions go into `bids` rows and come back as the same auctions
(market/auction_record.py): every part, through a real store table and its Parquet export, so
verify and a backtest run the engine on exactly what the tick ran on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from burstmarket.auction import IslandInput, Protected, Release, Unit, clear
from burstmarket.market.auction_record import NEXT, NOW, bid_batch, read_auctions
from burstmarket.market.ladder import published_ladder
from burstmarket.market.tables import BIDS
from burstmarket.market.tick.types import AuctionRecord, StepDown
from burstmarket.store import Database

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T_NS = int(T.timestamp()) * 1_000_000_000
MINUTE = 60 * 1_000_000_000

NOW_AUCTION = IslandInput(
    nodes=3,
    gpus_per_node=8,
    reserve_price=1_000_000,
    units=(
        Unit("v:a:000000", "a", 1, 3_250_100, 5),
        Unit("v:a:000001", "a", 1, 3_250_100, 5),
        Unit("j:g:pair", "g", 2, 2_900_000, 7),
        Unit("v:b:000000", "b", 1, 1_000_000, 9),
    ),
    protected=(Protected("a", 1, 2_000_000), Protected("g", 2, 1_500_000)),
)
NEXT_AUCTION = IslandInput(
    nodes=1,
    gpus_per_node=8,
    reserve_price=1_000_000,
    units=(Unit("v:b:000000", "b", 1, 1_000_000, 2),),
    protected=(Protected("a", 3, 3_000_000),),
)
STEP_DOWNS = (StepDown("k", 2, 1_800_000, False), StepDown("k", 1, 2_100_000, True))
RELEASES = (
    Release(T_NS + 10 * MINUTE, 1, (Unit("n:x-n0001", "a", 1, 3_100_000, 0),)),
    Release(
        T_NS + 25 * MINUTE,
        2,
        (Unit("n:x-n0002", "a", 1, 2_500_000, 0), Unit("n:x-n0003", "a", 1, 2_400_000, 1)),
    ),
)

READ = """
SELECT tick, auction, part, cluster, unit, nodes, CAST(price * 1000000 AS BIGINT) AS price, age,
       epoch_us(ends_at) * 1000 AS ends_at, locked_by_clearing, gpus_per_node
FROM {source}
"""


def records_back(source: str, con: duckdb.DuckDBPyConnection) -> dict[str, AuctionRecord]:
    cur = con.execute(READ.format(source=source))
    names = [d[0] for d in cur.description]
    return read_auctions(dict(zip(names, row, strict=True)) for row in cur.fetchall())


def test_every_part_of_both_auctions_comes_back_through_the_store_and_parquet(
    tmp_path: Path,
) -> None:
    now = AuctionRecord(NOW_AUCTION, STEP_DOWNS)
    coming = AuctionRecord(NEXT_AUCTION, (), RELEASES)
    db = Database(tmp_path / "market.duckdb")
    try:
        with db.write() as cur:
            BIDS.insert_batch(cur, bid_batch("x", 7, T, now, coming))
        exported = tmp_path / "bids.parquet"
        with db.read() as cur:
            stored = records_back("bids", cur)
            cur.execute(
                f"COPY (SELECT * EXCLUDE (island) FROM bids ORDER BY ALL) TO '{exported}' "
                "(FORMAT parquet)"
            )
    finally:
        db.close()
    with duckdb.connect() as con:
        from_file = records_back(f"read_parquet('{exported}')", con)
    for back in (stored, from_file):
        # ages come back as places in the age order: the order, all the auction reads of them
        assert back[NOW].auction.units == tuple(
            Unit(u.id, u.cluster, u.nodes, u.price, age) for age, u in enumerate(NOW_AUCTION.units)
        )
        assert back[NOW].auction.protected == NOW_AUCTION.protected
        assert back[NOW].step_downs == STEP_DOWNS
        assert (back[NOW].auction.nodes, back[NOW].auction.reserve_price) == (3, 1_000_000)
        assert back[NEXT].releases == RELEASES  # their units given with their ages 0, 1
        # the engine gives the same on what came back as on what went in
        assert clear(back[NOW].auction) == clear(NOW_AUCTION)
        assert published_ladder(back[NEXT].auction, back[NEXT].releases, T_NS) == (
            published_ladder(NEXT_AUCTION, RELEASES, T_NS)
        )
