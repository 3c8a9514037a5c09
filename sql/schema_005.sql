-- Schema 5: how each tick's core payments were reached (docs/market.md "One tick", step 7).
--
-- ticks.core_rounds: rounds the minimum-revenue core point took: payment points examined from VCG
--                    on, the last one blocked by no coalition (0: nothing won on the island, so
--                    nothing to price).
-- ticks.core_exact:  the payments are the exact minimum-revenue core point nearest VCG (rounded
--                    up to whole µUSD); it must always read true. NULL on ticks from before.
ALTER TABLE ticks ADD COLUMN core_rounds INTEGER;
ALTER TABLE ticks ADD COLUMN core_exact BOOLEAN;
