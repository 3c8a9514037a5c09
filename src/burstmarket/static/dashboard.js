// The live dashboard: one panel per island, largest island first, and a chart comparing the
// islands chosen. The charts show the range chosen in the header (hour, day, week, month, or a
// custom range typed in or dragged across a chart) as candles from /api/market/series, fetched
// again whenever the island ticks, never finer than the island's tick; the download links ask
// the same endpoint for the same candles as CSV or Arrow. The figures, the GPUs and the last
// ticks come live from the public websocket feed (/ws/market); the price-to-win ladder is read
// again (/api/market/ladder) whenever the island ticks. Every time shown is UTC.
// docs/dashboard-and-console.md says what each part shows.
"use strict";

// MINUTE, HOUR, DAY, COMPARE_COLORS, PriceChart and CompareChart: pricechart.js
const SPANS = { hour: HOUR, day: DAY, week: 7 * DAY, month: 30 * DAY };
const CANDLE = { hour: "1m", day: "5m", week: "1h", month: "1h" }; // the finest each range draws
const INTERVALS = [["1m", MINUTE], ["5m", 5 * MINUTE], ["15m", 15 * MINUTE],
  ["30m", 30 * MINUTE], ["1h", HOUR], ["1d", DAY]];   // the series endpoint's buckets
const MAX_CANDLES = 800;     // a custom range's candles at most
const STALE_TICKS = 3;       // an island is stale once its last tick is this many intervals old
const KEEP = 32;             // ticks kept per island for the figures and the last-ticks table
const LADDER_ROWS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128];
const TABLE_ROWS = 8;
// a rung's reason code (docs/api.md), in words for its row's hover; an unknown one as it came
const REASONS = { "windows-hold": "protection windows hold these nodes until then" };
const islands = new Map();   // id -> panel state
const compared = new Set();  // the islands on the compare chart
let socket = null;
let connected = false;
let view = { range: "hour" }; // or { range: "custom", start, end } (ms)
let serverOffset = 0;        // the server's clock (its Date header) minus the browser's, ms

const fmt = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(4));
const stamp = (iso) => iso.slice(0, 19).replace("T", " ");
const isoMinute = (ms) => new Date(ms).toISOString().slice(0, 16);

function setStatus(state, text) {
  const el = document.getElementById("status");
  el.dataset.state = state;
  el.textContent = text;
}

async function getJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  const date = Date.parse(response.headers.get("date") || "");
  if (!Number.isNaN(date)) serverOffset = date - Date.now();
  return response.json();
}

// the island's size and GPU model, as the operator described its nodes
function describe(state) {
  const { info, node } = state;
  node.querySelector(".name").textContent = `Island ${info.id}`;
  const gpu = info.node_spec && info.node_spec.gpus;
  node.querySelector(".spec").textContent =
    `${info.nodes} nodes × ${info.gpus_per_node} GPUs` + (gpu ? ` · ${gpu} per node` : "");
}

function panel(info) {
  let state = islands.get(info.id);
  if (state) {
    state.info = info;
    describe(state);
    return state;
  }
  const node = document.getElementById("island-template").content.firstElementChild
    .cloneNode(true);
  node.dataset.island = info.id;
  document.getElementById("empty").hidden = true;
  state = {
    info, node, points: new Map(), subscribed: false, lastTick: 0, lastTime: null, drawn: "",
    fetching: false, ladderTick: 0,
    chart: new PriceChart(node.querySelector("canvas.chart"), node.querySelector(".tip"), zoom),
  };
  describe(state);
  islands.set(info.id, state);
  if (islands.size <= 2) compared.add(info.id); // the two largest at first
  return state;
}

// the largest island (in GPUs) first, then by name; the compare chart above them
function order() {
  const main = document.getElementById("islands");
  const sorted = [...islands.values()].sort((a, b) =>
    b.info.nodes * b.info.gpus_per_node - a.info.nodes * a.info.gpus_per_node
    || a.info.id.localeCompare(b.info.id));
  sorted.forEach((state, i) => {
    const at = main.children[i + 2] || null; // after #compare and #empty
    if (at !== state.node) main.insertBefore(state.node, at);
  });
  comparePicker(sorted);
}

function onStats(state, tick, time, data) {
  state.points.set(tick, {
    tick, time, vwap: data.vwap, min: data.min, max: data.max, reserve: data.reserve_price,
    gpus: data.gpus, clusters: data.clusters, pending: data.pending_gpus,
  });
  if (tick >= state.lastTick) { state.lastTick = tick; state.lastTime = time; }
  while (state.points.size > KEEP) state.points.delete(Math.min(...state.points.keys()));
  state.dirty = true;
}

function render(state) {
  state.dirty = false;
  const pts = [...state.points.values()].sort((a, b) => a.tick - b.tick);
  const last = pts[pts.length - 1];
  if (!last) return;
  const q = (sel) => state.node.querySelector(sel);
  q(".vwap").textContent = fmt(last.vwap);
  q(".range").textContent = last.vwap === null ? "–" : `${fmt(last.min)}–${fmt(last.max)}`;
  q(".reserve").textContent = fmt(last.reserve);
  q(".tick").textContent = String(last.tick);
  const total = state.info.nodes * state.info.gpus_per_node;
  q(".bar .held").style.width = `${(100 * Math.min(last.gpus, total)) / total}%`;
  q(".bar .pending").style.width =
    `${(100 * Math.min(last.pending, total - Math.min(last.gpus, total))) / total}%`;
  q(".held-n").textContent = String(last.gpus);
  q(".pending-n").textContent = String(last.pending);
  q(".total-n").textContent = String(total);
  q("table.ticks tbody").replaceChildren(...pts.slice(-TABLE_ROWS).reverse().map((p) => row([
    p.tick, stamp(p.time), fmt(p.vwap), fmt(p.min), fmt(p.max), p.gpus, p.clusters, p.pending,
  ])));
}

// -- the price-to-win ladder -------------------------------------------------------------------

// a time of the ladder's, with the date too if it is not the tick's day
function clock(at, tickTime) {
  const hhmm = at.slice(11, 16);
  return at.slice(0, 10) === tickTime.slice(0, 10) ? hhmm : `${at.slice(5, 10)} ${hhmm}`;
}

// When a rung can be won: at the next tick (contestable now), or from when windows let it.
function when(rung, tickTime) {
  return rung.contestable_at ? `from ${clock(rung.contestable_at, tickTime)}` : "next tick";
}

// The cheapest price over the next hour, as windows end (`later`), if under the rung's own.
function nextHour(rung, tickTime) {
  const later = rung.later || [];
  if (!later.length) return "–";
  const best = later.reduce((a, b) => (b.price_per_gpu_hour < a.price_per_gpu_hour ? b : a));
  return `${fmt(best.price_per_gpu_hour)} at ${clock(best.at, tickTime)}`;
}

function drawLadder(state, ladder) {
  const rungs = ladder.rungs || [];
  const top = Math.max(...rungs.map((r) => r.price_per_gpu_hour), 0.0001);
  const shown = rungs.filter((r) => LADDER_ROWS.includes(r.nodes) || r === rungs[rungs.length - 1]);
  const body = state.node.querySelector("table.ladder tbody");
  const first = rungs[0];
  state.node.querySelector(".win").textContent = first
    ? fmt(first.price_per_gpu_hour) + (first.contestable_at ? ` ${when(first, ladder.time)}` : "") : "–";
  if (!rungs.length) {
    const tr = row(["no node can be contested now nor has a set time to be (out of service or in base load)"]);
    tr.firstChild.colSpan = 6;
    tr.firstChild.className = "note";
    body.replaceChildren(tr);
    return;
  }
  body.replaceChildren(...shown.map((r) => {
    const tr = row([r.nodes, r.gpus, fmt(r.price_per_gpu_hour), when(r, ladder.time),
      nextHour(r, ladder.time), ""]);
    if (r.contestable_at) tr.className = "later";
    if (r.reason) tr.title = REASONS[r.reason] || r.reason;
    const later = r.later || [];
    if (later.length) {
      tr.children[4].title = later.map((l) => `${fmt(l.price_per_gpu_hour)} at ${clock(l.at, ladder.time)}`)
        .join(", ");
    }
    const bar = document.createElement("i");
    bar.style.width = `${(100 * r.price_per_gpu_hour) / top}%`;
    tr.lastChild.className = "barcell";
    tr.lastChild.appendChild(bar);
    return tr;
  }));
}

async function refreshLadder(state) {
  const tick = state.lastTick;
  if (state.ladderBusy || !tick || tick === state.ladderTick) return;
  state.ladderBusy = true;
  try {
    const ladder = await getJson(`/api/market/ladder?island=${encodeURIComponent(state.info.id)}`);
    drawLadder(state, ladder);
    state.ladderTick = ladder.tick;
    state.node.querySelector("table.ladder").dataset.tick = String(ladder.tick);
  } catch (error) {
    setStatus("down", `cannot read the ladder: ${error.message}`);
  } finally {
    state.ladderBusy = false;
  }
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = String(c);
    tr.appendChild(td);
  }
  return tr;
}

// -- the range and the candles -----------------------------------------------------------------

// The candle for a span: the range's own (or, for a custom range, the finest that keeps
// MAX_CANDLES), never finer than `tickSeconds`, the island's tick.
function candleFor(span, tickSeconds, preset) {
  const floor = Math.max(tickSeconds * 1000, preset ? INTERVALS.find(([n]) => n === preset)[1] : 0);
  const fits = INTERVALS.find(([, ms]) => ms >= floor && (preset || span / ms <= MAX_CANDLES));
  return fits || INTERVALS[INTERVALS.length - 1];
}

// What a chart of islands `tickSeconds` (the coarsest tick among them) shows: the candle
// width, and the domain [start, end) in whole candles. A preset range ends with the bucket of
// `lastTime` (ms), the latest tick shown.
function frameOf(tickSeconds, lastTime) {
  if (view.range === "custom") {
    const [interval, width] = candleFor(view.end - view.start, tickSeconds, null);
    const start = Math.floor(view.start / width) * width;
    return { interval, width, start, end: Math.max(Math.ceil(view.end / width) * width, start + width) };
  }
  const [interval, width] = candleFor(SPANS[view.range], tickSeconds, CANDLE[view.range]);
  const end = Math.floor(lastTime / width) * width + width;
  return { interval, width, start: end - Math.ceil(SPANS[view.range] / width) * width, end };
}

function seriesUrl(island, frame, format) {
  const params = new URLSearchParams({
    island, interval: frame.interval, start: new Date(frame.start).toISOString(),
    end: new Date(frame.end).toISOString(),
    limit: String(Math.min(10000, Math.round((frame.end - frame.start) / frame.width))),
  });
  if (format) params.set("format", format);
  return `/api/market/series?${params}`;
}

async function candlesOf(island, frame) {
  const candles = await getJson(seriesUrl(island, frame));
  return candles.map((c) => ({ ...c, t: Date.parse(c.start) }));
}

const viewKey = () => JSON.stringify(view);

// The chart's candles for the chosen range, fetched again once the island has ticked since.
async function refreshChart(state) {
  const key = `${viewKey()}@${state.lastTick}`;
  if (state.fetching || !state.lastTick || key === state.drawn) return;
  state.fetching = true;
  const frame = frameOf(state.info.tick_seconds, Date.parse(state.lastTime));
  const wanted = viewKey(), tick = state.lastTick;
  try {
    const candles = await candlesOf(state.info.id, frame);
    if (wanted !== viewKey()) return; // the range changed meanwhile: the next round fetches it
    state.chart.update(candles, frame.width, frame.start, frame.end);
    const canvas = state.node.querySelector("canvas.chart");
    canvas.dataset.range = view.range;
    canvas.dataset.interval = frame.interval;
    canvas.dataset.lastTick = String(tick);
    state.node.querySelector(".interval").textContent = frame.interval;
    state.node.querySelector("a.csv").href = seriesUrl(state.info.id, frame, "csv");
    state.node.querySelector("a.arrow").href = seriesUrl(state.info.id, frame, "arrow");
    const form = document.getElementById("custom");
    if (!form.contains(document.activeElement)) {
      form.elements.from.value = isoMinute(frame.start); // the range shown, in whole candles
      form.elements.to.value = isoMinute(frame.end);
    }
    state.drawn = key;
  } catch (error) {
    setStatus("down", `cannot read the series: ${error.message}`);
  } finally {
    state.fetching = false;
  }
}

// -- comparing islands -------------------------------------------------------------------------

const compareChart = new CompareChart(document.querySelector("canvas.compare-chart"), zoom);
let compareDrawn = "";
let compareFetching = false;

function comparePicker(sorted) {
  const section = document.getElementById("compare");
  section.hidden = sorted.length < 2;
  const pick = section.querySelector(".compare-pick");
  if (pick.children.length === sorted.length) return;
  pick.replaceChildren(...sorted.map((state, i) => {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = state.info.id;
    box.checked = compared.has(state.info.id);
    box.addEventListener("change", () => {
      if (box.checked) compared.add(box.value); else compared.delete(box.value);
      refreshCompare();
    });
    const swatch = document.createElement("i");
    swatch.className = "swatch s-line";
    swatch.style.background = COMPARE_COLORS[i % COMPARE_COLORS.length];
    label.append(box, swatch, state.info.id);
    return label;
  }));
}

async function refreshCompare() {
  const chosen = [...islands.values()].filter((s) => compared.has(s.info.id) && s.lastTick);
  const colors = new Map([...document.querySelectorAll(".compare-pick input")]
    .map((box, i) => [box.value, COMPARE_COLORS[i % COMPARE_COLORS.length]]));
  const key = `${viewKey()}@${chosen.map((s) => `${s.info.id}:${s.lastTick}`).join(",")}`;
  if (compareFetching || key === compareDrawn || document.getElementById("compare").hidden) return;
  compareFetching = true;
  try {
    // one candle width for all: the coarsest tick among them; the range ends with the latest
    const tickSeconds = Math.max(0, ...chosen.map((s) => s.info.tick_seconds));
    const last = Math.max(0, ...chosen.map((s) => Date.parse(s.lastTime)));
    const frame = frameOf(tickSeconds, last);
    const lines = await Promise.all(chosen.map(async (s) => ({
      island: s.info.id, color: colors.get(s.info.id), candles: await candlesOf(s.info.id, frame),
    })));
    if (!key.startsWith(viewKey())) return;
    compareChart.update(lines, frame.width, frame.start, frame.end);
    const canvas = compareChart.canvas;
    canvas.dataset.range = view.range;
    canvas.dataset.interval = frame.interval;
    canvas.dataset.islands = lines.map((l) => l.island).join(",");
    document.querySelector("#compare .interval").textContent = frame.interval;
    compareDrawn = key;
  } catch (error) {
    setStatus("down", `cannot read the series: ${error.message}`);
  } finally {
    compareFetching = false;
  }
}

// -- choosing the range ------------------------------------------------------------------------

function showRange() {
  for (const button of document.querySelectorAll(".ranges button")) {
    button.setAttribute("aria-pressed", String(button.dataset.range === view.range));
  }
  const custom = document.querySelector(".ranges button[data-range='custom']");
  custom.disabled = view.range !== "custom";
  for (const state of islands.values()) refreshChart(state);
  refreshCompare();
}

function chooseRange(name) {
  if (name === "custom") return;
  view = { range: name };
  showRange();
}

// a custom range [start, end) in ms, from a drag across a chart or the form
function zoom(start, end) {
  view = { range: "custom", start: Math.floor(start / MINUTE) * MINUTE, end: Math.ceil(end / MINUTE) * MINUTE };
  showRange();
}

document.getElementById("custom").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = event.target;
  // the inputs read as UTC, as every time on the page
  const start = Date.parse(`${form.elements.from.value}Z`), end = Date.parse(`${form.elements.to.value}Z`);
  if (Number.isNaN(start) || Number.isNaN(end) || end <= start) {
    form.elements.to.setCustomValidity("the end must come after the start");
    form.reportValidity();
    return;
  }
  form.elements.to.setCustomValidity("");
  zoom(start, end);
});

// -- live or stale -----------------------------------------------------------------------------

// An island is stale once its last tick is STALE_TICKS of its intervals old on the server's
// clock; the page is live while the feed is connected and some island is not stale.
function showFreshness() {
  if (!connected) return;
  const now = Date.now() + serverOffset;
  let latest = null, fresh = false;
  for (const state of islands.values()) {
    if (!state.lastTime) continue;
    const at = Date.parse(state.lastTime);
    const stale = now - at > STALE_TICKS * state.info.tick_seconds * 1000;
    const badge = state.node.querySelector(".stale");
    badge.hidden = !stale;
    badge.textContent = stale ? `stale since ${stamp(state.lastTime)}` : "";
    fresh = fresh || !stale;
    if (!latest || at > Date.parse(latest)) latest = state.lastTime;
  }
  if (!latest) return;
  if (fresh) setStatus("live", `live · last tick ${stamp(latest)}`);
  else setStatus("stale", `stale since ${stamp(latest)}`);
}

// -- the feed ----------------------------------------------------------------------------------

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

// Subscribe an island that has ticked to its stats, from where we are (or the last few ticks).
async function subscribe(state) {
  if (!socket || socket.readyState !== WebSocket.OPEN) return;
  state.subscribed = true;
  let from = state.lastTick + 1;
  if (!state.lastTick) {
    let stats;
    try {
      stats = await getJson(`/api/market/stats?island=${encodeURIComponent(state.info.id)}`);
    } catch (error) {
      state.subscribed = false; // no tick yet: the next refresh tries again
      return;
    }
    from = Math.max(1, stats.tick - TABLE_ROWS + 1);
  }
  send({ op: "subscribe", channels: [`stats:${state.info.id}`], from_tick: from });
}

async function refreshIslands() {
  try {
    for (const info of await getJson("/api/islands")) {
      const state = panel(info);
      if (!state.subscribed) await subscribe(state);
    }
    order();
  } catch (error) {
    setStatus("down", `cannot read islands: ${error.message}`);
  }
}

function onMessage(event) {
  const message = JSON.parse(event.data);
  if (message.type === "snapshot" || message.type === "update") {
    const [kind, id] = message.channel.split(":");
    const state = islands.get(id);
    if (state && kind === "stats") onStats(state, message.tick, message.time, message.data);
    showFreshness();
  } else if (message.type === "error" && message.field === "from_tick") {
    // asked further back than the server replays: start where it can
    const id = message.island;
    const state = islands.get(id);
    if (state && message.earliest_tick) {
      send({ op: "subscribe", channels: [`stats:${id}`], from_tick: message.earliest_tick });
    }
  }
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws/market`);
  socket.addEventListener("open", () => {
    connected = true;
    setStatus("live", "live");
    for (const state of islands.values()) state.subscribed = false;
    refreshIslands();
  });
  socket.addEventListener("message", onMessage);
  socket.addEventListener("close", () => {
    connected = false;
    setStatus("down", "disconnected · reconnecting…");
    setTimeout(connect, 2000);
  });
}

// Draw at most once per animation frame, however many ticks arrive (a replay brings several).
function frame() {
  for (const state of islands.values()) if (state.dirty) render(state);
  requestAnimationFrame(frame);
}

for (const button of document.querySelectorAll(".ranges button")) {
  button.addEventListener("click", () => chooseRange(button.dataset.range));
}
connect();
setInterval(refreshIslands, 5000);
setInterval(() => {
  for (const state of islands.values()) { refreshChart(state); refreshLadder(state); }
  refreshCompare();
  showFreshness();
}, 1000);
requestAnimationFrame(frame);
