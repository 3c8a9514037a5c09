// Why demand waits, in words a tenant reads, with the figures the tick gave
// (`pending_reason` and `pending_detail`, docs/market.md "Why it waits"), one sentence per
// cause; `context` is what the page knows besides: the spend limit's read, the live block,
// the latest tick's time and the island's node size.
import { usd, rate, moment, plural } from "./api.js";

const WORDS = {
  "billing-hold": (d) => `A billing hold since ${moment(d.since, d.today)}: the account's `
    + `balance is ${usd(d.balance_usd)}, so no market capacity is held or granted until it is `
    + "above zero again.",
  "spend-limit": (d, c) => `The spend limit: the worst case of what waits is `
    + `${usd(d.worst_case_usd)}, and ${d.left_usd > 0 ? `${usd(d.left_usd)} is left` : "nothing is left"}`
    + ` in this 24 h window`
    + (c.spend && c.spend.usd_per_day !== null ? ` of ${usd(c.spend.usd_per_day)} per day.` : "."),
  "bid-too-low": (d) => `Bid too low: ${d.ceiling === undefined ? "no limit price"
    : `the ceiling of ${rate(d.ceiling)}`} is under the island's reserve price of `
    + `${rate(d.reserve_price)}, so nothing can be won.`,
  PackingDisabled: () => "Jobs smaller than a node need packing onto the block, which is not "
    + "enabled for this cluster.",
  ReservedBusy: (d, c) => (c.live
    ? `Waiting for room on the base load block ${c.live.id}: its ${c.live.gpus} GPUs are all `
      + "busy."
    : "Waiting for a base load block: this cluster holds none live (one bought above starts "
      + "at once)."),
  ReservedTooSmall: (d, c) => `Its pods are ${d.gpus} GPUs together, more than one node's `
    + `${c.gpusPerNode}, though each is smaller than a node: resubmit with whole-node pods or `
    + "fewer pods.",
  "no-supply": (d) => `No supply: it needs ${plural(d.nodes, "node")} at once, more than the `
    + `${d.market_nodes} the island has for the market (outside base load blocks).`,
  windows: (d) => `Windows hold the nodes: ${plural(d.nodes, "node")} can be won from `
    + `${moment(d.contestable_at, d.today)} at ${rate(d.price_then)}, within the ceiling of `
    + `${rate(d.ceiling)}; until then no bid can take them.`,
  outbid: (d) => `Outbid: ${plural(d.nodes, "node")} take ${rate(d.price_to_win)}`
    + (d.contestable_at ? ` from ${moment(d.contestable_at, d.today)}, when windows let them go`
      : " at the next tick")
    + `, above the ceiling of ${rate(d.ceiling)}: raise it to win them, or wait for the price `
    + "to fall.",
};

export function waits(reason, detail, context) {
  const words = WORDS[reason];
  if (!words) {
    return "Not priced by a tick yet (declared or raised since the last one): the next tick "
      + "decides.";
  }
  return words({ ...(detail || {}), today: context.today }, context);
}
