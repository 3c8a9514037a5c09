// The tenant console (/console): a cluster signs in with its token and sees the Burst capacity
// page, Base Load above Preemptible. Every read and action is a call of the public tenant API
// (api.js); the island's ticks come live from the public websocket feed (/ws/market), and each
// tick of the island refreshes the cluster's own reads (its own price-to-win ladder among
// them), so a grant or a reclaim shows within a tick. Once the reads after a tick are in, <body> carries
// data-refreshed-tick (what the browser test waits for). A "First five minutes" card on top
// lists docs/first-five-minutes.md's steps until it is dismissed.
import { api, token, Refusal, usd, rate, price4, amount2, time, hours, plural } from "./api.js";
import { drawSpend } from "./spendchart.js";
import { waits } from "./reasons.js";
import { cells, when } from "./ladder.js";

const $ = (selector, root = document) => root.querySelector(selector);
const RANGES = { day: 24 * 3600e3, week: 7 * 24 * 3600e3, month: 30 * 24 * 3600e3 };
const LADDER_ROWS = 12;  // rungs shown (and the one for the GPUs typed)
const BUCKET = { "1h": 3600e3, "1d": 24 * 3600e3 };
const SPEC_LABELS = { cpu: "CPU", gpus: "GPUs", memory: "Memory", storage: "Storage",
  network: "Network" };
const SIGNED_OUT = "burstmarket.console.signed-out";  // why the last session ended
const FIRST_FIVE = "burstmarket.console.first-five-minutes";  // "dismissed": the card is not shown

let me = null;          // the signed-in cluster: {id, account, island, kind, gpus_per_node}
let socket = null;
let lastTick = 0, lastTime = null;
let refreshing = null, again = false;
let picked = null;      // the offer cell picked in the buy card
let ladder = null;      // the cluster's own ladder (GET /api/ladder) of the latest tick
const confirming = new Set();  // jobs whose Finish waits for its confirmation

function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

function row(cells, attrs, cell = "td") {
  const tr = el("tr", null, attrs);
  for (const text of cells) tr.appendChild(el(cell, text));
  return tr;
}

function say(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

// Run an action of a form or a button: its refusal, if any, in words where it belongs.
async function act(box, action) {
  const where = $(".refusal[role=alert]", box);
  say(where, "");
  try {
    await action();
    await refresh();
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    say(where, error.message);
    if (error.code === "unauthorized") signOut(error.message);
  }
}

// A number field's value (null when empty); a price goes out with the digits typed, which the
// API reads exactly (and refuses past 4 decimals).
const number = (form, name) => {
  const value = form.elements[name].value.trim();
  return value === "" ? null : Number(value);
};

// --- sign in / out ----------------------------------------------------------------------------

async function signIn(value) {
  token.set(value);
  try {
    me = await api.get("/api/cluster");
  } catch (error) {
    token.clear();
    if (!(error instanceof Refusal)) throw error;
    say($("#sign-in-error"), error.message);
    return;
  }
  say($("#sign-in-error"), "");
  $("#token").value = "";
  $("#sign-in").hidden = true;
  $("#console").hidden = false;
  $("#who").hidden = false;
  document.body.dataset.kind = me.kind;
  $("#who-cluster").textContent = me.id;
  $("#who-account").textContent = me.account;
  $("#who-island").textContent = me.island;
  $("#who-kind").textContent = me.kind === "vm" ? "VM cluster" : "Kubernetes cluster";
  $("#first-five").hidden = localStorage.getItem(FIRST_FIVE) === "dismissed";
  $("#declare").elements.max_gpus.step = String(me.gpus_per_node);
  $("#declare .grid-hint").textContent =
    `Whole nodes only: a multiple of ${me.gpus_per_node} GPUs on this island.`;
  await showIsland();
  connect();
  await refresh();
}

// Signing out loads the page afresh: nothing of the cluster stays in it, not even hidden, for
// whoever signs in next in this tab. The reason, if any, is said on the sign-in form.
function signOut(message) {
  token.clear();
  if (message) sessionStorage.setItem(SIGNED_OUT, message);
  location.reload();
}

function setStatus(state, text) {
  const status = $("#status");
  status.dataset.state = state;
  status.textContent = text;
}

// --- the island: node specs (public /api/islands) ---------------------------------------------

async function showIsland() {
  const islands = await (await fetch("/api/islands")).json();
  const island = islands.find((i) => i.id === me.island);
  me.reserve_price = island.reserve_price;  // for a ceiling under it said before a tick
  const lines = [`${island.nodes} nodes × ${island.gpus_per_node} GPUs on island ${island.id}`];
  const spec = island.node_spec;
  if (spec && typeof spec === "object" && !Array.isArray(spec)) {
    for (const [key, value] of Object.entries(spec)) {
      lines.push(`${SPEC_LABELS[key] || key}: ${value}`);
    }
  } else if (spec) {
    lines.push(String(spec));
  }
  $("#specs .spec-lines").replaceChildren(...lines.map((line) => el("li", line)));
}

// --- live: the island's feed --------------------------------------------------------------------

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/market`);
  socket.onopen = () => subscribe();
  socket.onmessage = (event) => onMessage(JSON.parse(event.data));
  socket.onclose = () => {
    setStatus("down", "feed disconnected · reconnecting…");
    setTimeout(connect, 2000);
  };
}

function subscribe() {
  const channels = [`stats:${me.island}`];
  socket.send(JSON.stringify({ op: "subscribe", channels }));
}

function onMessage(message) {
  if (message.type === "snapshot" || message.type === "update") {
    // a snapshot after a reconnect says the feed is live again, whether or not a tick ran
    const fresh = message.tick > lastTick;
    if (fresh) {
      lastTick = message.tick;
      lastTime = message.time;
    }
    setStatus("live", `live · tick ${lastTick} at ${time(lastTime)}`);
    if (fresh) refresh();
  } else if (message.type === "error" && message.error === "not-ticked-yet") {
    // the island has not ticked yet: ask again shortly
    setStatus("waiting", "waiting for the island's first tick…");
    setTimeout(() => { if (socket && socket.readyState === WebSocket.OPEN) subscribe(); }, 2000);
  }
}

// --- the cluster's own reads, after each tick and each action ---------------------------------

function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      const tick = lastTick;
      try {
        const spend = api.get("/api/spend-limit");  // the spend card's and a hold's figures
        // a Kubernetes cluster's blocks: its block card's, and what its jobs on the block pay
        const blocks = me.kind === "k8s" ? api.get("/api/base-load") : null;
        await Promise.all(me.kind === "vm"
          ? [showCapacity(spend), readLadder(), showSpend(spend), showAccount(), showReceipt(),
            showBilling(), showBaseLoadForVm()]
          : [showBidAndJobs(spend, blocks), readLadder(), showBlocks(blocks), showOffers(),
            showSpend(spend), showAccount(), showReceipt(), showBilling()]);
        document.body.dataset.refreshedTick = String(tick);
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        if (error.code === "unauthorized") { signOut(error.message); return; }
        setStatus("down", error.message);
      }
    } while (again);
  })().finally(() => { refreshing = null; });
  return refreshing;
}

// --- Base Load ------------------------------------------------------------------------------

function showBaseLoadForVm() {
  say($("#base-load-note"), "Base load blocks are for Kubernetes clusters: this VM cluster "
    + "holds capacity in the Preemptible section above.");
}

async function showBlocks(blocksRead) {
  const { live, past } = await blocksRead;
  const box = $("#your-block .live-block");
  if (!live) {
    box.replaceChildren(el("p", "No live block. A block bought below starts at once and "
      + "shows here.", { class: "note" }));
  } else {
    const figures = [
      ["block", live.id],
      ["nodes", `${plural(live.nodes, "node")} (${live.gpus} GPUs)`],
      ["rate", rate(live.rate_per_gpu_hour)],
      ["term", `${hours(live.term_hours)}, ${time(live.starts_at)} to ${time(live.ends_at)}`],
      ["ends", time(live.ends_at)],
      ["price", usd(live.price_usd)],
      ["billed so far", usd(live.billed_usd)],
      ["deposit", live.deposit_usd ? `${usd(live.deposit_usd)} (held: `
        + `${usd(live.deposit_held_usd)})` : "none: the balance covered the price"],
    ];
    if (live.owed_by) {
      figures.push(["owed by wire", `${usd(live.owed_usd)} due by ${time(live.owed_by)}`
        + (live.overdue ? " — overdue" : "")]);
    }
    const dl = el("dl", null, { class: "block-figures", "data-block": live.id });
    for (const [term, value] of figures) {
      dl.append(el("dt", term), el("dd", value, { "data-figure": term }));
    }
    box.replaceChildren(dl);
  }
  const table = $("#your-block .past-blocks");
  table.hidden = past.length === 0;
  $("tbody", table).replaceChildren(...past.map((b) => row([
    b.id, b.nodes, b.gpus, price4(b.rate_per_gpu_hour), time(b.starts_at),
    time(b.ended_at || b.ends_at), b.state, amount2(b.billed_usd),
  ])));
}

function cellText(cell) {
  if (cell.state === "available") return rate(cell.rate_per_gpu_hour);
  if (cell.state === "not-available") return "not available on this island";
  return cell.until ? `sold out until ${time(cell.until)}` : "sold out";
}

async function showOffers() {
  const offers = await api.get("/api/base-load/offers");
  const card = $("#buy");
  const fold = $("details.fold", card);
  const folded = offers.live_block !== null;
  card.dataset.folded = String(folded);
  $(".fold-line", card).textContent = folded
    ? "This cluster holds a live block (above): another can be bought when it ends."
    : `Posted sizes and terms on island ${offers.island} (pick one)`;
  if (folded && card.dataset.wasFolded !== "true") fold.open = false;
  if (!folded) fold.open = true;
  card.dataset.wasFolded = String(folded);
  say($(".closed", card), offers.buying_open ? "" : "Buying base load on this island is not "
    + "open here: your account team arranges the block.");
  const sizes = [...new Set(offers.cells.map((c) => c.size_gpus))].sort((a, b) => a - b);
  const terms = [...new Set(offers.cells.map((c) => c.term_hours))].sort((a, b) => a - b);
  const head = row(["size", ...terms.map(hours)], {}, "th");
  $("table.offers thead", card).replaceChildren(head);
  $("table.offers", card).hidden = !offers.buying_open || !offers.cells.length;
  const byKey = new Map(offers.cells.map((c) => [`${c.size_gpus}:${c.term_hours}`, c]));
  $("table.offers tbody", card).replaceChildren(...sizes.map((size) => {
    const nodes = size / offers.gpus_per_node;
    const tr = row([`${size} GPUs (${plural(nodes, "node")})`]);
    for (const term of terms) {
      const cell = byKey.get(`${size}:${term}`);
      const td = el("td", null, { "data-size": size, "data-term": term,
        "data-state": cell ? cell.state : "none" });
      if (!cell) td.textContent = "–";
      else if (cell.state === "available" && !folded) {
        const button = el("button", cellText(cell), { type: "button" });
        if (picked && picked.size_gpus === size && picked.term_hours === term) {
          button.setAttribute("aria-pressed", "true");
        }
        button.addEventListener("click", () => pick(cell));
        td.appendChild(button);
      } else td.textContent = cellText(cell);
      tr.appendChild(td);
    }
    return tr;
  }));
  if (picked) {
    picked = byKey.get(`${picked.size_gpus}:${picked.term_hours}`) || null;
    if (folded || !picked || picked.state !== "available") picked = null;
  }
  showPick();
}

function pick(cell) {
  picked = cell;
  for (const button of document.querySelectorAll("#buy table.offers button")) {
    const td = button.parentElement;
    button.setAttribute("aria-pressed", String(
      Number(td.dataset.size) === cell.size_gpus && Number(td.dataset.term) === cell.term_hours));
  }
  showPick();
}

function showPick() {
  const box = $("#buy .pick");
  box.hidden = !picked;
  if (!picked) return;
  const c = picked;
  $(".pick-price", box).textContent = `${c.size_gpus} GPUs (${plural(c.nodes, "node")}) for `
    + `${hours(c.term_hours)} at ${rate(c.rate_per_gpu_hour)}: ${usd(c.price_usd)} for the `
    + "whole block, starting at once.";
  const wire = c.price_usd - c.deposit_usd;
  say($(".pick-deposit", box), c.deposit_usd > 0
    ? `The balance does not cover the whole price: a security deposit of ${usd(c.deposit_usd)}`
      + " is taken from it now" + (wire > 0 ? `, and ${usd(wire)} is to be wired by the next `
      + "business day." : ".")
    : "");
}

async function buy() {
  const { size_gpus, term_hours } = picked;
  await act($("#buy .fold"), async () => {
    await api.post("/api/base-load", { size_gpus, term_hours });
    picked = null;
  });
}

// --- Preemptible: VM -----------------------------------------------------------------------

let declared = false;

async function showCapacity(spendRead) {
  const [cap, spend] = await Promise.all([api.get("/api/vm/capacity"), spendRead]);
  const form = $("#declare");
  if (!declared) {  // the form starts from the standing declaration, then is the user's
    form.elements.max_gpus.value = String(cap.max_gpus);
    form.elements.price.value = cap.max_price_per_gpu_hour === null ? ""
      : String(cap.max_price_per_gpu_hour);
    declared = true;
    checkGrid();
  }
  const box = $("#held");
  $(".holding", box).textContent = `Holding ${cap.held_gpus} GPUs `
    + `(${plural(cap.nodes.length, "node")}) of ${cap.max_gpus} declared at most `
    + rate(cap.max_price_per_gpu_hour)
    + (cap.rate === null ? "." : `; paying ${rate(cap.rate)} now.`);
  box.dataset.held = String(cap.held_gpus);
  say($(".rate-why", box), cap.rate === null || !cap.nodes.length ? "" : rateWhy(cap));
  const pending = cap.pending_gpus ? `${cap.pending_gpus} GPUs pending. ` : "";
  // a ceiling under the reserve is said at once, before a tick has priced it
  const reason = cap.pending_reason || (cap.bid_too_low ? "bid-too-low" : null);
  const detail = cap.pending_detail || { ceiling: cap.max_price_per_gpu_hour,
    reserve_price: me.reserve_price };
  say($(".pending-why", box), pending || reason
    ? pending + waits(reason, detail, why(spend, null)) : "");
  $("table.nodes tbody", box).replaceChildren(...cap.nodes.map((n) => row([
    n.id, time(n.granted_at), time(n.window_ends_at), price4(n.locked_price),
  ])));
}

// "locked" beside "paying": the lock is what won each node (docs/market.md "Windows"), the rate
// what the last tick's auction priced for all of them (step 7), so the two differ.
function rateWhy(cap) {
  const locks = cap.nodes.map((n) => n.locked_price).filter((p) => p !== null);
  const low = Math.min(...locks), high = Math.max(...locks);
  const locked = low === high ? price4(low) : `${price4(low)}–${price4(high)}`;
  return `Paying ${rate(cap.rate)}: the rate the last tick's auction priced for the `
    + `${plural(cap.nodes.length, "node")} you hold, what they keep other bids out of (the `
    + "island's reserve at least), never above your ceiling"
    + (cap.max_price_per_gpu_hour === null ? "." : ` of ${rate(cap.max_price_per_gpu_hour)}.`)
    + ` Locked (${locked}) is the ceiling each node was won at: until its window ends no bid `
    + "can take it, and it pays at most the higher of that lock and your ceiling now.";
}

// What the words of a pending cause draw on besides its figures.
const why = (spend, live) => ({ spend, live, today: lastTime, gpusPerNode: me.gpus_per_node });

// The grid flagged as it is typed; Declare still sends it, and the server's refusal says why.
function checkGrid() {
  const form = $("#declare");
  const gpus = number(form, "max_gpus");
  const g = me.gpus_per_node;
  say($(".off-grid", form), gpus !== null && gpus % g !== 0
    ? `${gpus} GPUs is not a whole number of ${g}-GPU nodes: ${Math.floor(gpus / g) * g} or `
      + `${(Math.floor(gpus / g) + 1) * g} would be.` : "");
  showLadder();
}

// The nodes the VM form's GPUs ask for beyond those held (0 for a Kubernetes cluster).
function wantedMore() {
  if (!me || me.kind !== "vm" || !ladder) return 0;
  const gpus = number($("#declare"), "max_gpus") || 0;
  return Math.max(0, Math.ceil(gpus / me.gpus_per_node) - ladder.held_nodes);
}

// "What would 4 more nodes cost": the own ladder's rung for the GPUs typed, marked in the table.
function costNow() {
  const more = wantedMore();
  const rung = more ? ladder.rungs.find((r) => r.nodes === more) : null;
  $("#declare .cost-now").textContent = rung
    ? `${plural(more, "more node")}: ${rate(rung.price_per_gpu_hour)}, ${when(rung, lastTime)}; `
      + `your whole holding then ${usd(rung.usd_per_hour)} per hour`
    : "";
  for (const tr of document.querySelectorAll("#ladder tbody tr")) {
    tr.classList.toggle("chosen", Number(tr.dataset.nodes) === more);
  }
}

async function readLadder() {
  try {
    ladder = await api.get("/api/ladder");
  } catch (error) {
    if (!(error instanceof Refusal) || error.code !== "not-found") throw error;
    ladder = null;  // the island has not ticked yet
  }
  showLadder();
}

// The first rungs of the cluster's own price to win, and the one for the GPUs typed.
function showLadder() {
  const body = $("#ladder tbody");
  if (!ladder) return;
  $("#ladder .ladder-note").textContent = `For n more nodes than the `
    + `${plural(ladder.held_nodes, "node")} you hold: the lowest price at which the next tick `
    + (me.kind === "vm" ? "grants them to a declaration at that ceiling"
      : "grants them to a new job of n nodes at that limit")
    + ", if nothing else changes. Your own bids are left out: you are never priced against "
    + "yourself. Your holding then: what all your nodes would be billed per hour.";
  const wanted = wantedMore();
  const shown = ladder.rungs.filter((r) => r.nodes <= LADDER_ROWS || r.nodes === wanted);
  if (!shown.length) {
    body.replaceChildren(row(["no more nodes can be won on this island"]));
  } else {
    body.replaceChildren(...shown.map((r) => row(cells(r, lastTime),
      { "data-nodes": r.nodes })));
    for (const tr of body.querySelectorAll("tr")) tr.lastElementChild.classList.add("later");
  }
  if (me.kind === "vm") costNow();
}

// --- Preemptible: Kubernetes ---------------------------------------------------------------

async function showBidAndJobs(spendRead, blocksRead) {
  const [bid, jobs, spend, blocks] = await Promise.all([api.get("/api/k8s/bid"),
    api.get("/api/k8s/jobs"), spendRead, blocksRead]);
  showBid(bid, spend);
  showJobs(jobs, why(spend, blocks.live));
}

function showBid(bid, spend) {
  $("#bid .bid-now").textContent = bid.limit_price_per_gpu_hour === null
    ? "No limit price: the jobs bid nothing on the market until one is set."
    : `Now ${rate(bid.limit_price_per_gpu_hour)}` + (bid.bid_too_low
      ? " — bid too low: under the island's reserve price, nothing is granted." : ".");
  say($("#bid .held-back"), bid.pending_reason
    ? waits(bid.pending_reason, bid.pending_detail, why(spend, null)) : "");
}

// What a job is, holds and pays, in words: pods share a node of the block; a job on the block
// pays the block's rate and bids nothing, so it shows no limit; a job on the market shows the
// limit it bids (its own, else the cluster's) and, running, the cluster's rate.
function jobFigures(job, live) {
  const pods = job.pods !== null;
  const size = pods ? `${plural(job.pods, "pod")} × ${job.gpus_per_pod} GPUs`
    : plural(job.nodes, "node");
  const figures = [el("span", size)];
  if (job.state === "running") {
    const held = pods ? `${job.pods * job.gpus_per_pod} GPUs of node ${job.node_ids[0]}`
      : `${plural(job.node_ids.length, "node")} held`;
    figures.push(el("span", held, { class: "held-nodes" }));
  }
  if (job.block !== null) {
    const blockRate = live && live.id === job.block ? ` at ${rate(live.rate_per_gpu_hour)}` : "";
    figures.push(el("span", `on the base load block${blockRate}`, { class: "pays" }));
  } else if (!pods && job.state !== "finished") {
    if (job.rate !== null) figures.push(el("span", `paying ${rate(job.rate)}`, { class: "pays" }));
    figures.push(el("span", job.limit_price_per_gpu_hour === null
      ? "no limit: bids nothing on the market"
      : `bids up to ${rate(job.limit_price_per_gpu_hour)}`, { class: "limit" }));
  }
  return figures;
}

// Finish asks first, in the job's own line; the question outlives the tick's redraw.
function finishControls(job) {
  if (!confirming.has(job.name)) {
    const finish = el("button", "Finish", { type: "button", class: "finish" });
    finish.addEventListener("click", () => { confirming.add(job.name); refresh(); });
    return finish;
  }
  const box = el("span", null, { class: "confirm" });
  const yes = el("button", "Yes, finish", { type: "button", class: "finish-yes" });
  const keep = el("button", "Keep it", { type: "button", class: "keep" });
  yes.addEventListener("click", () => {
    confirming.delete(job.name);
    act($("#jobs"), () => api.delete(`/api/k8s/jobs/${encodeURIComponent(job.name)}`));
  });
  keep.addEventListener("click", () => { confirming.delete(job.name); refresh(); });
  box.append(el("span", job.state === "running"
    ? `Finish ${job.name}? It stops now and its nodes go idle.`
    : `Finish ${job.name}? It stops waiting and is never started.`), yes, keep);
  return box;
}

// Each pending job says its own cause, from the tick (`context`: what the words draw on).
function showJobs(jobs, context) {
  const live = context.live;
  const list = $("#jobs .job-list");
  if (!jobs.length) {
    list.replaceChildren(el("p", "No jobs yet.", { class: "note" }));
    return;
  }
  list.replaceChildren(...jobs.map((job) => {
    const box = el("div", null, { class: "job", "data-job": job.name, "data-state": job.state });
    const line = el("div", null, { class: "job-line" });
    line.append(el("b", job.name), el("span", job.state, { class: `state ${job.state}` }),
      ...jobFigures(job, live));
    if (job.state !== "finished") line.appendChild(finishControls(job));
    box.appendChild(line);
    if (job.state === "pending") {
      box.appendChild(el("p", waits(job.pending_reason, job.pending_detail, context),
        { class: "why" }));
    }
    const events = [...job.events].sort((a, b) => b.at.localeCompare(a.at));
    const ul = el("ul", null, { class: "events" });
    for (const event of events) {
      const li = el("li", null, { "data-type": event.type });
      li.append(el("span", time(event.at), { class: "at" }), el("b", event.type),
        el("span", event.detail));
      ul.appendChild(li);
    }
    box.appendChild(ul);
    return box;
  }));
}

// --- spend limit ---------------------------------------------------------------------------

async function showSpend(spendRead) {
  const s = await spendRead;
  const figures = [
    ["limit", s.usd_per_day === null ? "none" : `${usd(s.usd_per_day)} per day`],
    ["window started", s.window_started_at ? time(s.window_started_at) : "no window open"],
    ["spent", usd(s.spent_usd)],
    ["committed", usd(s.committed_usd)],
    ["left", s.left_usd === null ? "no limit" : usd(s.left_usd)],
  ];
  $("#spend .spend-figures").replaceChildren(...figures.flatMap(([term, value]) => [
    el("dt", term), el("dd", value, { "data-figure": term })]));
}

// --- the account: its money, this cluster's spend window, the runway ------------------------

const runway = (h) => (h === null ? "none needed: nothing is billed per hour now"
  : h >= 48 ? `${(h / 24).toFixed(1)} days (${Math.round(h)} h) at that rate`
    : `${h.toFixed(1)} h at that rate`);

async function showAccount() {
  const a = await api.get("/api/account");
  const figures = [
    ["balance", usd(a.balance_usd)],
    ["deposit held", a.deposit_held_usd ? `${usd(a.deposit_held_usd)} (base load deposits, `
      + "out of the balance)" : "none"],
    ["owed by wire", a.owed_usd ? `${usd(a.owed_usd)} due by ${time(a.owed_by)}` : "nothing"],
    ["billing hold", a.billing_hold_since ? `since ${time(a.billing_hold_since)}` : "none"],
    ["spent (24 h window)", usd(a.spent_24h_usd)],
    ["committed", usd(a.committed_usd)],
    ["rate", `${usd(a.rate_usd_per_hour)} per hour (the account's clusters, market and base `
      + "load)"],
    ["runway", runway(a.runway_hours)],
  ];
  const card = $("#account");
  card.dataset.account = a.account;
  $(".account-figures", card).replaceChildren(...figures.flatMap(([term, value]) => [
    el("dt", term), el("dd", value, { "data-figure": term })]));
  say($(".hold-why", card), a.billing_hold_since ? "The balance is at or below zero: no "
    + "market capacity is held or granted until credit or a wire brings it above zero." : "");
}

// --- why this rate: the latest tick's receipt (docs/market.md "Receipts") -------------------

const exact = (v) => `${Number(v).toFixed(6)} USD`;  // a tick's interval: µUSD, adding up

// Other clusters' demand as price levels × nodes, never who; a negative count is demand that
// holds nodes now and would give way.
const levels = (list) => list.map((l) => (l.nodes >= 0
  ? `${plural(l.nodes, "node")} bid ${price4(l.price)}`
  : `${plural(-l.nodes, "node")} held at ${price4(l.price)} giving way`)).join(", ");

async function showReceipt() {
  const [receipt] = await api.get("/api/receipts?limit=1");
  const card = $("#receipt");
  const table = $("table.receipt-parts", card);
  table.hidden = !receipt;
  card.dataset.tick = receipt ? String(receipt.tick) : "";
  if (!receipt) {
    $(".receipt-head", card).textContent = "No market nodes held at a tick yet: nothing billed "
      + "on the market to explain.";
    return;
  }
  const r = receipt, p = r.parts;
  $(".receipt-head", card).textContent = `Tick ${r.tick} at ${time(r.time)}: `
    + `${plural(r.nodes, "market node")} (${r.gpus} GPUs) at ${rate(r.rate)}, `
    + `${exact(r.amount_usd)} for the tick's interval, in these parts:`;
  const parts = [
    ["reserve", p.reserve, "the island's reserve price on the nodes won"],
    ["displaced", p.displaced, r.displaced.length
      ? `the bids your won nodes keep out: ${levels(r.displaced)}`
      : "no other bid was kept out by your won nodes"],
    ["core addition", p.core, r.core
      ? `others together offered more (${levels(r.core.coalition)}, `
        + `${usd(r.core.value)} per hour over the reserve): the winners pay at least that`
      : "none: no group of other bids offered more than the winners pay"],
    ["protected", p.protected, r.protected_displaced.length || p.protected
      ? "your nodes under their window pay what they keep out"
        + (r.protected_displaced.length ? ` (${levels(r.protected_displaced)})` : "")
        + (r.capped ? ", capped at their locked price" : "")
      : "no node held under its window"],
  ];
  $("tbody", table).replaceChildren(
    ...parts.map(([part, amount, what]) => row([part, exact(amount), what], { "data-part": part })),
    row(["billed", exact(r.amount_usd), "the sum: what the tick billed for these nodes"],
      { class: "total", "data-part": "billed" }),
  );
}

// --- billing -------------------------------------------------------------------------------

function billingRange() {
  const form = $("#billing");
  const granularity = $("select[name=granularity]", form).value;
  const width = BUCKET[granularity];
  const now = lastTime ? Date.parse(lastTime) : Date.now();
  const end = Math.floor(now / width) * width + width;  // the bucket still open included
  const start = end - RANGES[$("select[name=range]", form).value];
  const query = `start=${new Date(start).toISOString()}&end=${new Date(end).toISOString()}`
    + `&granularity=${granularity}`;
  return { start, end, width, query };
}

async function showBilling() {
  const { start, end, width, query } = billingRange();
  const rows = await api.get(`/api/billing?${query}`);
  $("#billing").dataset.query = query;
  const buckets = [];
  for (let t = start; t < end; t += width) buckets.push(t);
  drawSpend($("#billing canvas"), rows, buckets, width);
  const total = (kind) => rows.filter((r) => r.kind === kind)
    .reduce((sum, r) => sum + r.amount_usd, 0);
  $("#billing .billing-total").textContent = `In this range: ${usd(total("market"))} market, `
    + `${usd(total("base_load"))} base load.`;
  $("#billing tbody").replaceChildren(...rows.map((r) => row([
    time(r.start), time(r.end), r.kind === "market" ? "market" : "base load",
    r.gpu_hours.toFixed(2), r.amount_usd.toFixed(6),
  ], { "data-kind": r.kind })));
}

async function downloadCsv() {
  const { query } = billingRange();
  await act($("#billing"), async () => {
    const text = await api.csv(`/api/billing?${query}&format=csv`);
    const link = el("a", null, { download: `billing-${me.id}.csv` });
    link.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  });
}

// --- wiring --------------------------------------------------------------------------------

$("#sign-in").addEventListener("submit", (event) => {
  event.preventDefault();
  signIn($("#token").value.trim());
});
$("#sign-out").addEventListener("click", () => signOut());
$("#first-five .dismiss").addEventListener("click", () => {
  localStorage.setItem(FIRST_FIVE, "dismissed");
  $("#first-five").hidden = true;
});

$("#declare").addEventListener("input", checkGrid);
$("#declare").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  act(form, () => api.put("/api/vm/capacity", {
    max_gpus: number(form, "max_gpus"), max_price_per_gpu_hour: number(form, "price"),
  }));
});

$("#bid").addEventListener("submit", (event) => {
  event.preventDefault();
  act(event.target, () => api.put("/api/k8s/bid",
    { limit_price_per_gpu_hour: number(event.target, "price") }));
});

$("#jobs .new-job").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  const body = { name: form.elements.name.value.trim() };
  for (const field of ["nodes", "pods", "gpus_per_pod"]) {
    const value = number(form, field);
    if (value !== null) body[field] = value;
  }
  const limit = number(form, "price");
  if (limit !== null) body.limit_price_per_gpu_hour = limit;
  act($("#jobs"), async () => {
    await api.post("/api/k8s/jobs", body);
    form.reset();
  });
});

$("#spend").addEventListener("submit", (event) => {
  event.preventDefault();
  act(event.target, () => api.put("/api/spend-limit", { usd_per_day: number(event.target, "usd") }));
});
$("#spend .remove").addEventListener("click", () =>
  act($("#spend"), () => api.put("/api/spend-limit", { usd_per_day: null })));

$("#buy .buy-button").addEventListener("click", buy);
for (const select of document.querySelectorAll("#billing select")) {
  select.addEventListener("change", () => refresh());
}
$("#billing .csv").addEventListener("click", downloadCsv);

say($("#sign-in-error"), sessionStorage.getItem(SIGNED_OUT));
sessionStorage.removeItem(SIGNED_OUT);
if (token.get()) signIn(token.get());
