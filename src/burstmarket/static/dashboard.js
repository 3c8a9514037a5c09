// The live dashboard: one panel per island, largest island first. The chart shows the range
// chosen in the header (hour, day, week, month) as candles from /api/market/series, fetched
// again whenever the island ticks; the figures, the GPUs, the last ticks and the price-to-win
// ladder come live from the public websocket feed (/ws/market). Every time shown is UTC.
"use strict";

const RANGES = {              // candle width and how many: the series endpoint's own buckets
  hour: { interval: "1m", width: 60e3, limit: 60 },
  day: { interval: "5m", width: 300e3, limit: 288 },
  week: { interval: "1h", width: 3600e3, limit: 168 },
  month: { interval: "1h", width: 3600e3, limit: 744 },
};
const KEEP = 32;             // ticks kept per island for the figures and the last-ticks table
const LADDER_ROWS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128];
const TABLE_ROWS = 8;
const islands = new Map();   // id -> panel state
let socket = null;
let range = "hour";

const fmt = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(4));

function setStatus(state, text) {
  const el = document.getElementById("status");
  el.dataset.state = state;
  el.textContent = text;
}

async function getJson(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
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
    info, node, points: new Map(), subscribed: false, lastTick: 0, drawnTick: 0,
    fetching: false, chart: new PriceChart(node.querySelector("canvas.chart"),
      node.querySelector(".tip")),
  };
  describe(state);
  islands.set(info.id, state);
  return state;
}

// the largest island (in GPUs) first, then by name
function order() {
  const main = document.getElementById("islands");
  const sorted = [...islands.values()].sort((a, b) =>
    b.info.nodes * b.info.gpus_per_node - a.info.nodes * a.info.gpus_per_node
    || a.info.id.localeCompare(b.info.id));
  sorted.forEach((state, i) => {
    if (main.children[i + 1] !== state.node) main.insertBefore(state.node, main.children[i + 1] || null);
  });
}

function onStats(state, tick, time, data) {
  state.points.set(tick, {
    tick, time, vwap: data.vwap, min: data.min, max: data.max, reserve: data.reserve_price,
    gpus: data.gpus, clusters: data.clusters, pending: data.pending_gpus,
  });
  state.lastTick = Math.max(state.lastTick, tick);
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
    p.tick, p.time.slice(0, 19).replace("T", " "), fmt(p.vwap), fmt(p.min), fmt(p.max),
    p.gpus, p.clusters, p.pending,
  ])));
  state.reserve = last.reserve;
}

// When a rung can be contested: "now", or its time (the date too if it is not the tick's day).
function when(rung, tickTime) {
  if (!rung.contestable_at) return "now";
  const at = rung.contestable_at;
  const hhmm = at.slice(11, 16);
  return at.slice(0, 10) === tickTime.slice(0, 10) ? `from ${hhmm}` : `from ${at.slice(5, 10)} ${hhmm}`;
}

function onLadder(state, time, data) {
  const rungs = (state.rungs = ladderAfter(state.rungs, data));
  const top = Math.max(...rungs.map((r) => r.price_per_gpu_hour), 0.0001);
  const shown = rungs.filter((r) => LADDER_ROWS.includes(r.nodes) || r === rungs[rungs.length - 1]);
  const body = state.node.querySelector("table.ladder tbody");
  const first = rungs[0];
  state.node.querySelector(".win").textContent = first
    ? fmt(first.price_per_gpu_hour) + (first.contestable_at ? ` ${when(first, time)}` : "") : "–";
  state.node.querySelector(".ladder-note").hidden = !rungs.some((r) => r.contestable_at);
  if (!rungs.length) {
    const tr = row(["no node can be contested now nor has a set time to be (out of service or in base load)"]);
    tr.firstChild.colSpan = 5;
    tr.firstChild.className = "note";
    body.replaceChildren(tr);
    return;
  }
  body.replaceChildren(...shown.map((r) => {
    const tr = row([r.nodes, r.gpus, fmt(r.price_per_gpu_hour), when(r, time), ""]);
    if (r.reason) { tr.title = LADDER_REASONS[r.reason] || r.reason; tr.className = "later"; }
    const bar = document.createElement("i");
    bar.style.width = `${(100 * r.price_per_gpu_hour) / top}%`;
    tr.lastChild.className = "barcell";
    tr.lastChild.appendChild(bar);
    return tr;
  }));
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

// The chart's candles for the chosen range, fetched again once the island has ticked since.
async function refreshChart(state) {
  const wanted = range, tick = state.lastTick;
  if (state.fetching || !tick || (tick === state.drawnTick && wanted === state.drawnRange)) return;
  state.fetching = true;
  const { interval, width, limit } = RANGES[wanted];
  const id = encodeURIComponent(state.info.id);
  try {
    const candles = await getJson(`/api/market/series?island=${id}&interval=${interval}&limit=${limit}`);
    if (wanted !== range) return; // the range changed meanwhile: the next round fetches it
    state.chart.update(candles.map((c) => ({ ...c, t: Date.parse(c.start) })), width,
      state.reserve ?? null);
    const canvas = state.node.querySelector("canvas.chart");
    canvas.dataset.range = wanted;
    canvas.dataset.lastTick = String(tick);
    state.node.querySelector(".interval").textContent = interval;
    state.drawnTick = tick;
    state.drawnRange = wanted;
  } catch (error) {
    setStatus("down", `cannot read the series: ${error.message}`);
  } finally {
    state.fetching = false;
  }
}

function chooseRange(name) {
  range = name;
  for (const button of document.querySelectorAll(".ranges button")) {
    button.setAttribute("aria-pressed", String(button.dataset.range === name));
  }
  for (const state of islands.values()) refreshChart(state);
}

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

// Subscribe an island that has ticked: stats from where we are (or the last few ticks), ladder
// live.
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
  send({ op: "subscribe", channels: [`ladder:${state.info.id}`] });
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
    if (!state) return;
    if (kind === "stats") onStats(state, message.tick, message.time, message.data);
    else if (kind === "ladder") onLadder(state, message.time, message.data);
    setStatus("live", `live · last tick ${message.time.slice(0, 19).replace("T", " ")}`);
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
    setStatus("live", "live");
    for (const state of islands.values()) state.subscribed = false;
    refreshIslands();
  });
  socket.addEventListener("message", onMessage);
  socket.addEventListener("close", () => {
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
setInterval(() => { for (const state of islands.values()) refreshChart(state); }, 1000);
requestAnimationFrame(frame);
