// The cluster's own ladder (GET /api/ladder, docs/market.md "The cluster's own ladder") as the
// console's table rows: for n more nodes, the price, what the whole holding would be billed,
// when ("next tick", or "from 14:05" while windows hold the nodes) and the cheaper moment
// later in the hour, if any ("cheaper at 14:05:10").
import { price4, amount2, moment } from "./api.js";

export const when = (rung, today) => (rung.contestable_at === null ? "next tick"
  : `from ${moment(rung.contestable_at, today)}`);

// The lowest later price under the rung's (the earliest of equals), or null.
export function cheaper(rung) {
  let best = null;
  for (const later of rung.later) {
    if (later.price_per_gpu_hour >= rung.price_per_gpu_hour) continue;
    if (best === null || later.price_per_gpu_hour < best.price_per_gpu_hour) best = later;
  }
  return best;
}

export function cells(rung, today) {
  const low = cheaper(rung);
  return [
    rung.nodes, price4(rung.price_per_gpu_hour), amount2(rung.usd_per_hour), when(rung, today),
    low ? `cheaper at ${moment(low.at, today)}: ${price4(low.price_per_gpu_hour)}` : "–",
  ];
}
