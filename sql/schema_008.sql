-- Schema 8: a ladder rung's prices over time (docs/market.md "One tick", step 9).
--
-- ladder.later: the rung's price from each later time protection windows end within the hour
--               of the tick, where it changes (`since`: that time; `price`: µUSD per GPU-hour
--               as USD); empty on ticks from before, and where no window ends within the hour.
ALTER TABLE ladder ADD COLUMN later STRUCT(since TIMESTAMP WITH TIME ZONE, price DECIMAL(18,6))[] NOT NULL DEFAULT [];
