// The live dashboard: one panel per island, fed by the public websocket feed (/ws/market).
// On (re)subscribe the stats channel replays the recent ticks (`from_tick`), so the chart starts
// with up to an hour of history and a dropped connection loses nothing.
"use strict";

const KEEP = 720;            // ticks kept per island (two hours at 10 s ticks)
const BACKFILL = 360;        // ticks asked for on the first subscribe
const LADDER_ROWS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128];
const TABLE_ROWS = 8;
const islands = new Map();   // id -> panel state
let socket = null;

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

function panel(info) {
  let state = islands.get(info.id);
  if (state) { state.info = info; return state; }
  const node = document.getElementById("island-template").content.firstElementChild
    .cloneNode(true);
  node.dataset.island = info.id;
  node.querySelector(".name").textContent =
    `Island ${info.id} · ${info.nodes} nodes × ${info.gpus_per_node} GPUs`;
  document.getElementById("islands").appendChild(node);
  document.getElementById("empty").hidden = true;
  state = {
    info, node, points: new Map(), subscribed: false, lastTick: 0,
    chart: new PriceChart(node.querySelector("canvas.chart")),
  };
  islands.set(info.id, state);
  return state;
}

function onStats(state, tick, time, data) {
  state.points.set(tick, {
    tick, t: Date.parse(time), time, vwap: data.vwap, min: data.min, max: data.max,
    reserve: data.reserve_price, gpus: data.gpus, clusters: data.clusters,
    pending: data.pending_gpus,
  });
  state.lastTick = Math.max(state.lastTick, tick);
  while (state.points.size > KEEP) state.points.delete(Math.min(...state.points.keys()));
  state.dirty = true;
}

function render(state) {
  state.dirty = false;
  const pts = [...state.points.values()].sort((a, b) => a.tick - b.tick);
  state.chart.update(pts);
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
}

function onLadder(state, data) {
  const rungs = data.rungs || [];
  const top = Math.max(...rungs.map((r) => r.price_per_gpu_hour), 0.0001);
  const shown = rungs.filter((r) => LADDER_ROWS.includes(r.nodes) || r === rungs[rungs.length - 1]);
  const body = state.node.querySelector("table.ladder tbody");
  if (!rungs.length) {
    const tr = row(["no node is contestable this tick: all are held under windows"]);
    tr.firstChild.colSpan = 4;
    tr.firstChild.className = "note";
    body.replaceChildren(tr);
    return;
  }
  body.replaceChildren(...shown.map((r) => {
    const tr = row([r.nodes, r.gpus, fmt(r.price_per_gpu_hour), ""]);
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

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

// Subscribe an island that has ticked: stats from where we are (or an hour back), ladder live.
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
    from = Math.max(1, stats.tick - BACKFILL + 1);
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
    else if (kind === "ladder") onLadder(state, message.data);
    setStatus("live", `live · last update ${new Date().toLocaleTimeString()}`);
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

// Draw at most once per animation frame, however many ticks arrive (a replay brings hundreds).
function frame() {
  for (const state of islands.values()) if (state.dirty) render(state);
  requestAnimationFrame(frame);
}

connect();
setInterval(refreshIslands, 5000);
requestAnimationFrame(frame);
