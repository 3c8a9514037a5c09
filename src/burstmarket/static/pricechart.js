// The dashboard's canvas charts (no library: the page ships with the package and loads nothing
// else). `PriceChart` is one island's candles from /api/market/series over the range shown: the
// vwap as a step line (a candle's price holds until the next one; nothing is interpolated) over
// the min–max band of the rates paid, the reserve price as it was at each candle (a dashed step
// line), and under them the GPU-hours of each candle as volume bars. `CompareChart` is the vwap
// of several islands on one chart, one line each. Both label the time axis at round, distinct
// times, and a drag across either (mouse, pen or finger) picks a custom range.
// After each draw the canvas carries data-points (candles drawn with a vwap) and data-labels
// (the time axis' labels), which is how the browser tests see what was drawn; `canvas.chart` is
// the chart object (its scales, bars and labels included).
"use strict";

const fmt4 = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(4));
const MINUTE = 60e3, HOUR = 3600e3, DAY = 86400e3;
// the steps a time axis may label at, each a round time of the UTC clock
const LABEL_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080]
  .map((m) => m * MINUTE);
const PAD = { left: 48, right: 10, top: 10, bottom: 22 };
const VOLUME_SHARE = 0.22;   // of the plot's height, under the prices
const VOLUME_GAP = 14;       // px between the prices and the volume bars
const COMPARE_COLORS = ["#1f6feb", "#c026d3", "#059669", "#d97706", "#dc2626", "#0891b2"];

// "2025-03-31 23:05" (UTC): the page says once that every time is UTC
function utc(ms) {
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) + " " + iso.slice(11, 16);
}

function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// A canvas sized to its box at the device's pixel ratio, or null while it has no size.
function prepare(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth, height = canvas.clientHeight;
  if (!width || !height) return null;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  return { ctx, width, height };
}

// The time axis' labels over [t0, t1]: the smallest round step whose labels do not crowd
// `px` pixels, at the multiples of that step (UTC), each text distinct. A day or more apart:
// the date; within one day: the time (the date at midnight); across days at steps under a day:
// both.
function timeLabels(ctx, t0, t1, px) {
  const span = t1 - t0;
  const textOf = (step) => (t) => {
    const iso = new Date(t).toISOString();
    if (step >= DAY) return iso.slice(5, 10);
    if (span > DAY) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
    return t % DAY === 0 ? iso.slice(5, 10) : iso.slice(11, 16); // midnight: the new day
  };
  for (const step of LABEL_STEPS) {
    const text = textOf(step);
    const room = ctx.measureText(text(t0)).width + 18;
    if ((span / step) * room > px) continue;
    const out = [];
    // up to t1 but not at it: a day's span labels each time of day once
    for (let t = Math.ceil(t0 / step) * step; t < t1; t += step) out.push({ t, text: text(t) });
    return { step, labels: out };
  }
  const step = LABEL_STEPS[LABEL_STEPS.length - 1];
  return { step, labels: [{ t: Math.ceil(t0 / step) * step, text: textOf(step)(t0) }] };
}

function niceTicks(lo, hi, count) {
  const raw = (hi - lo) / count;
  const step = [1, 2, 2.5, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw)))
    .find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

// runs of candles that follow each other without a gap and have `key` (an empty bucket or a
// candle without holdings breaks the line: nothing is drawn where nothing traded)
function runs(candles, width, key) {
  const out = [];
  let current = [];
  for (const c of candles) {
    const adjacent = current.length && c.t === current[current.length - 1].t + width;
    if (c[key] === null || (current.length && !adjacent)) {
      if (current.length) out.push(current);
      current = [];
    }
    if (c[key] !== null) current.push(c);
  }
  if (current.length) out.push(current);
  return out;
}

function stepLine(ctx, run, width, x, y, key) {
  ctx.beginPath();
  ctx.moveTo(x(run[0].t), y(run[0][key]));
  for (const c of run) { ctx.lineTo(x(c.t), y(c[key])); ctx.lineTo(x(c.t + width), y(c[key])); }
  ctx.stroke();
}

// What both charts share: the domain [start, end), the axes, and the drag that picks a range.
class TimeChart {
  constructor(canvas, onRange) {
    this.canvas = canvas;
    this.onRange = onRange;
    this.start = 0;
    this.end = 0;
    this.width = MINUTE;
    this.labels = [];
    this.labelStep = 0;
    this.x = this.y = null;
    canvas.chart = this;
    new ResizeObserver(() => this.draw()).observe(canvas);
    const box = canvas.parentElement.querySelector(".selection");
    // Pointer events serve a mouse, a pen and a finger alike; the canvas leaves vertical pans
    // to the page (touch-action: pan-y), so a finger still scrolls the page over the chart.
    canvas.addEventListener("pointerdown", (event) => {
      if (!this.x || event.button > 0) return;
      this.dragFrom = event.clientX - canvas.getBoundingClientRect().left;
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener("pointermove", (event) => {
      if (this.dragFrom === undefined || !box) return;
      const px = event.clientX - canvas.getBoundingClientRect().left;
      box.style.left = `${Math.min(px, this.dragFrom)}px`;
      box.style.width = `${Math.abs(px - this.dragFrom)}px`;
      box.hidden = false;
    });
    const finish = (event) => {
      if (this.dragFrom === undefined) return;
      const px = event.clientX - canvas.getBoundingClientRect().left;
      const [a, b] = [Math.min(px, this.dragFrom), Math.max(px, this.dragFrom)];
      this.dragFrom = undefined;
      if (box) box.hidden = true;
      if (event.type === "pointerup" && b - a >= 8) this.onRange(this.time(a), this.time(b));
    };
    canvas.addEventListener("pointerup", finish);
    canvas.addEventListener("pointercancel", finish);
  }

  // the time at x = px (CSS pixels), within the domain
  time(px) {
    const w = this.canvas.clientWidth - PAD.left - PAD.right;
    const share = Math.min(1, Math.max(0, (px - PAD.left) / w));
    return this.start + share * (this.end - this.start);
  }

  axes(ctx, width, height, lo, hi, priceBottom) {
    const w = width - PAD.left - PAD.right;
    const x = (t) => PAD.left + ((t - this.start) / (this.end - this.start)) * w;
    const y = (v) => PAD.top + (1 - (v - lo) / (hi - lo)) * (priceBottom - PAD.top);
    this.x = x;
    this.y = y;
    ctx.strokeStyle = cssColor("--line");
    ctx.fillStyle = cssColor("--muted");
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const prices = niceTicks(lo, hi, 5);
    // as many decimals as the step needs (0.025 apart reads 0.975, not 0.98 beside 0.95)
    const gap = prices.length > 1 ? prices[1] - prices[0] : 1;
    const decimals = [2, 3, 4].find((d) => Math.abs(Math.round(gap * 10 ** d) - gap * 10 ** d) < 1e-6) ?? 4;
    for (const v of prices) {
      ctx.beginPath(); ctx.moveTo(PAD.left, y(v)); ctx.lineTo(PAD.left + w, y(v)); ctx.stroke();
      ctx.fillText(v.toFixed(decimals), PAD.left - 6, y(v));
    }
    const { step, labels } = timeLabels(ctx, this.start, this.end, w);
    this.labels = labels;
    this.labelStep = step;
    this.canvas.dataset.labels = labels.map((l) => l.text).join("|");
    ctx.textBaseline = "top";
    ctx.textAlign = "center";
    for (const { t, text } of labels) {
      ctx.beginPath();
      ctx.moveTo(x(t), PAD.top); ctx.lineTo(x(t), height - PAD.bottom);
      ctx.stroke();
      const half = ctx.measureText(text).width / 2;
      const at = Math.min(Math.max(x(t), PAD.left + half), width - PAD.right - half);
      ctx.fillText(text, at, height - PAD.bottom + 6);
    }
  }

  empty(ctx, height, text) {
    this.x = this.y = null;
    this.labels = [];
    this.canvas.dataset.labels = "";
    ctx.fillStyle = cssColor("--muted");
    ctx.fillText(text, PAD.left, height / 2);
  }
}

class PriceChart extends TimeChart {
  constructor(canvas, tip, onRange) {
    super(canvas, onRange);
    this.tip = tip;
    this.candles = [];
    this.bars = [];
    this.hover = null;
    canvas.addEventListener("mousemove", (event) => this.onHover(event));
    canvas.addEventListener("mouseleave", () => { this.hover = null; this.tip.hidden = true; this.draw(); });
  }

  // candles: [{t (start, ms), vwap, min, max, reserve_price, gpu_hours, ticks, closed}], oldest
  // first, `width` ms each, over the domain [start, end)
  update(candles, width, start, end) {
    Object.assign(this, { candles, width, start, end });
    if (this.hover !== null) this.hover = Math.min(this.hover, candles.length - 1);
    this.draw();
    this.showTip();
  }

  draw() {
    const prepared = prepare(this.canvas);
    if (!prepared) return;
    const { ctx, width, height } = prepared;
    const cs = this.candles;
    const priced = cs.filter((c) => c.vwap !== null);
    this.canvas.dataset.points = String(priced.length);
    this.bars = [];
    if (!cs.length || this.end <= this.start) {
      this.empty(ctx, height, "no ticks in this range yet…");
      return;
    }
    const plot = height - PAD.top - PAD.bottom;
    const volumeTop = PAD.top + plot * (1 - VOLUME_SHARE);
    const priceBottom = volumeTop - VOLUME_GAP;
    let lo = Infinity, hi = -Infinity;
    for (const c of cs) {
      for (const v of [c.min, c.max, c.vwap, c.reserve_price]) {
        if (v !== null && v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
    }
    if (hi - lo < 0.02) { lo -= 0.05; hi += 0.05; }
    const margin = (hi - lo) * 0.08;
    lo = Math.max(0, lo - margin); hi += margin;
    this.axes(ctx, width, height, lo, hi, priceBottom);
    const { x, y } = this;

    // the min–max band, in steps, one polygon per run of adjacent priced candles
    ctx.fillStyle = cssColor("--band");
    for (const run of runs(cs, this.width, "vwap")) {
      ctx.beginPath();
      ctx.moveTo(x(run[0].t), y(run[0].max));
      for (const c of run) { ctx.lineTo(x(c.t), y(c.max)); ctx.lineTo(x(c.t + this.width), y(c.max)); }
      for (const c of [...run].reverse()) {
        ctx.lineTo(x(c.t + this.width), y(c.min)); ctx.lineTo(x(c.t), y(c.min));
      }
      ctx.closePath();
      ctx.fill();
    }
    // the reserve as each candle's last tick had it, dashed
    ctx.strokeStyle = cssColor("--reserve");
    ctx.setLineDash([5, 4]);
    ctx.lineWidth = 1.5;
    for (const run of runs(cs, this.width, "reserve_price")) {
      stepLine(ctx, run, this.width, x, y, "reserve_price");
    }
    ctx.setLineDash([]);
    // the vwap, a step line: each candle's price across its span, vertical at the next
    ctx.strokeStyle = cssColor("--vwap");
    ctx.lineWidth = 2;
    for (const run of runs(cs, this.width, "vwap")) stepLine(ctx, run, this.width, x, y, "vwap");

    // volume: the GPU-hours of each candle, under the prices, on a scale of their own
    const volumeBottom = height - PAD.bottom;
    const top = Math.max(...cs.map((c) => c.gpu_hours), 0);
    ctx.fillStyle = cssColor("--muted");
    ctx.textAlign = "right";
    ctx.textBaseline = "top";
    ctx.fillText(top ? `${top.toFixed(top >= 100 ? 0 : 1)}` : "0", PAD.left - 6, volumeTop);
    ctx.textBaseline = "bottom";
    ctx.fillText("GPU-h", PAD.left - 6, volumeBottom);
    ctx.fillStyle = cssColor("--volume");
    for (const c of cs) {
      const x0 = x(c.t) + 0.5, x1 = Math.max(x(c.t + this.width) - 0.5, x0 + 1);
      const barTop = volumeBottom - (top ? (c.gpu_hours / top) * (volumeBottom - volumeTop) : 0);
      this.bars.push({ t: c.t, x0, x1, top: barTop, bottom: volumeBottom, gpu_hours: c.gpu_hours });
      if (c.gpu_hours > 0) ctx.fillRect(x0, barTop, x1 - x0, volumeBottom - barTop);
    }

    // the hovered candle, outlined
    const hovered = this.hover === null ? null : cs[this.hover];
    if (hovered && hovered.vwap !== null) {
      ctx.strokeStyle = cssColor("--ink");
      ctx.lineWidth = 1;
      ctx.strokeRect(x(hovered.t), y(hovered.max) - 2, x(hovered.t + this.width) - x(hovered.t),
        y(hovered.min) - y(hovered.max) + 4);
    }
  }

  onHover(event) {
    if (!this.x || !this.candles.length || this.dragFrom !== undefined) return;
    const box = this.canvas.getBoundingClientRect();
    const px = event.clientX - box.left;
    // the candle whose span holds the pointer, else the nearest one
    let best = 0, bestDistance = Infinity;
    this.candles.forEach((c, i) => {
      const from = this.x(c.t), to = this.x(c.t + this.width);
      const distance = px < from ? from - px : px > to ? px - to : 0;
      if (distance < bestDistance) { best = i; bestDistance = distance; }
    });
    if (best !== this.hover) { this.hover = best; this.draw(); }
    this.showTip(event.clientX - box.left, event.clientY - box.top);
  }

  showTip(px, py) {
    const c = this.hover === null ? null : this.candles[this.hover];
    if (!c) { this.tip.hidden = true; return; }
    const span = this.width >= HOUR ? utc(c.t) : `${utc(c.t)}–${utc(c.t + this.width).slice(11)}`;
    this.tip.replaceChildren(...[
      [span + (c.closed ? "" : " (open: still moving)")],
      ["vwap", fmt4(c.vwap)],
      ["min–max", c.vwap === null ? "–" : `${fmt4(c.min)}–${fmt4(c.max)}`],
      ["reserve", fmt4(c.reserve_price)],
      ["GPU-hours", Number(c.gpu_hours).toFixed(2)],
      ["ticks", String(c.ticks)],
    ].map(([label, value]) => {
      const line = document.createElement("div");
      line.className = value === undefined ? "tip-time" : "tip-line";
      line.textContent = value === undefined ? label : `${label} ${value}`;
      return line;
    }));
    this.tip.dataset.candle = String(this.hover);
    this.tip.hidden = false;
    if (px !== undefined) {
      const left = Math.min(px + 14, this.canvas.clientWidth - this.tip.offsetWidth - 4);
      this.tip.style.left = `${Math.max(0, left)}px`;
      this.tip.style.top = `${Math.max(0, py - this.tip.offsetHeight - 8)}px`;
    }
  }
}

// Several islands' vwap on one chart: lines [{island, color, candles}], `width` ms candles.
class CompareChart extends TimeChart {
  constructor(canvas, onRange) {
    super(canvas, onRange);
    this.lines = [];
  }

  update(lines, width, start, end) {
    Object.assign(this, { lines, width, start, end });
    this.draw();
  }

  draw() {
    const prepared = prepare(this.canvas);
    if (!prepared) return;
    const { ctx, width, height } = prepared;
    const values = this.lines.flatMap((l) => l.candles.map((c) => c.vwap)).filter((v) => v !== null);
    this.canvas.dataset.points = String(values.length);
    this.canvas.dataset.lines = String(this.lines.length);
    if (!values.length || this.end <= this.start) {
      this.empty(ctx, height, this.lines.length ? "no prices in this range yet…" : "choose islands to compare");
      return;
    }
    let lo = Math.min(...values), hi = Math.max(...values);
    if (hi - lo < 0.02) { lo -= 0.05; hi += 0.05; }
    const margin = (hi - lo) * 0.08;
    this.axes(ctx, width, height, Math.max(0, lo - margin), hi + margin, height - PAD.bottom);
    ctx.lineWidth = 2;
    for (const line of this.lines) {
      ctx.strokeStyle = line.color;
      for (const run of runs(line.candles, this.width, "vwap")) {
        stepLine(ctx, run, this.width, this.x, this.y, "vwap");
      }
    }
  }
}
