// A small canvas chart of one island's price candles (from /api/market/series): the vwap as a
// step line (a candle's price holds until the next one; nothing is interpolated) over the
// min–max band of the rates paid, with the current reserve price dashed. Hovering shows a
// candle's figures. No library: the page ships with the package and loads nothing else.
// After each draw the canvas carries data-points (candles drawn with a vwap), which is how the
// browser test sees that the chart drew; `canvas.chart` is this object (its scales included).
"use strict";

const fmt4 = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(4));

// "2025-03-31 23:05" (UTC): the page says once that every time is UTC
function utc(ms, withSeconds = false) {
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) + " " + iso.slice(11, withSeconds ? 19 : 16);
}

class PriceChart {
  constructor(canvas, tip) {
    this.canvas = canvas;
    this.tip = tip;
    this.candles = [];
    this.width = 60e3;
    this.reserve = null;
    this.hover = null;
    canvas.chart = this;
    new ResizeObserver(() => this.draw()).observe(canvas);
    canvas.addEventListener("mousemove", (event) => this.onHover(event));
    canvas.addEventListener("mouseleave", () => { this.hover = null; this.tip.hidden = true; this.draw(); });
  }

  // candles: [{t (start, ms), vwap, min, max, gpu_hours, ticks, closed}], oldest first;
  // width: a candle's span in ms; reserve: the island's reserve price now
  update(candles, width, reserve) {
    this.candles = candles;
    this.width = width;
    this.reserve = reserve;
    if (this.hover !== null) this.hover = Math.min(this.hover, candles.length - 1);
    this.draw();
    this.showTip();
  }

  draw() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!width || !height) return;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const cs = this.candles;
    const priced = cs.filter((c) => c.vwap !== null);
    canvas.dataset.points = String(priced.length);
    const style = getComputedStyle(document.documentElement);
    const color = (name) => style.getPropertyValue(name).trim();
    const pad = { left: 48, right: 10, top: 10, bottom: 22 };
    const w = width - pad.left - pad.right, h = height - pad.top - pad.bottom;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = color("--muted");
    if (!priced.length) {
      this.x = this.y = null;
      ctx.fillText("no prices in this range yet…", pad.left, pad.top + h / 2);
      return;
    }
    let lo = Infinity, hi = -Infinity;
    for (const c of priced) {
      for (const v of [c.min, c.max, c.vwap]) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    }
    if (this.reserve !== null) { lo = Math.min(lo, this.reserve); hi = Math.max(hi, this.reserve); }
    if (hi - lo < 0.02) { lo -= 0.05; hi += 0.05; }
    const margin = (hi - lo) * 0.08;
    lo = Math.max(0, lo - margin); hi += margin;
    const t0 = cs[0].t, t1 = cs[cs.length - 1].t + this.width;
    const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * w;
    const y = (v) => pad.top + (1 - (v - lo) / (hi - lo)) * h;
    this.x = x;
    this.y = y;

    // grid and axis labels
    ctx.strokeStyle = color("--line");
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of niceTicks(lo, hi, 5)) {
      ctx.beginPath(); ctx.moveTo(pad.left, y(v)); ctx.lineTo(pad.left + w, y(v)); ctx.stroke();
      ctx.fillText(v.toFixed(2), pad.left - 6, y(v));
    }
    ctx.textBaseline = "top";
    const labels = Math.max(2, Math.floor(w / 110));
    for (let i = 0; i <= labels; i++) {
      const t = t0 + ((t1 - t0) * i) / labels;
      ctx.textAlign = i === 0 ? "left" : i === labels ? "right" : "center";
      ctx.fillText(axisLabel(t, t1 - t0), x(t), pad.top + h + 6);
    }

    // the min–max band, in steps, one polygon per run of adjacent priced candles
    ctx.fillStyle = color("--band");
    for (const run of runs(cs, this.width)) {
      ctx.beginPath();
      ctx.moveTo(x(run[0].t), y(run[0].max));
      for (const c of run) { ctx.lineTo(x(c.t), y(c.max)); ctx.lineTo(x(c.t + this.width), y(c.max)); }
      for (const c of [...run].reverse()) {
        ctx.lineTo(x(c.t + this.width), y(c.min)); ctx.lineTo(x(c.t), y(c.min));
      }
      ctx.closePath();
      ctx.fill();
    }
    // the reserve price now, dashed
    if (this.reserve !== null) {
      ctx.strokeStyle = color("--reserve");
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(pad.left, y(this.reserve)); ctx.lineTo(pad.left + w, y(this.reserve));
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // the vwap, a step line: each candle's price across its span, vertical at the next
    ctx.strokeStyle = color("--vwap");
    ctx.lineWidth = 2;
    for (const run of runs(cs, this.width)) {
      ctx.beginPath();
      ctx.moveTo(x(run[0].t), y(run[0].vwap));
      for (const c of run) { ctx.lineTo(x(c.t), y(c.vwap)); ctx.lineTo(x(c.t + this.width), y(c.vwap)); }
      ctx.stroke();
    }
    // the hovered candle, outlined
    const hovered = this.hover === null ? null : cs[this.hover];
    if (hovered && hovered.vwap !== null) {
      ctx.strokeStyle = color("--ink");
      ctx.lineWidth = 1;
      ctx.strokeRect(x(hovered.t), y(hovered.max) - 2, x(hovered.t + this.width) - x(hovered.t),
        y(hovered.min) - y(hovered.max) + 4);
    }
  }

  onHover(event) {
    if (!this.x || !this.candles.length) return;
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
    const span = this.width >= 3600e3 ? utc(c.t) : `${utc(c.t)}–${utc(c.t + this.width).slice(11)}`;
    this.tip.replaceChildren(...[
      [span + (c.closed ? "" : " (open: still moving)")],
      ["vwap", fmt4(c.vwap)],
      ["min–max", c.vwap === null ? "–" : `${fmt4(c.min)}–${fmt4(c.max)}`],
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

// runs of candles that have a vwap and follow each other without a gap (an empty bucket or a
// candle without holdings breaks the line: nothing is drawn where nothing traded)
function runs(candles, width) {
  const out = [];
  let current = [];
  for (const c of candles) {
    const adjacent = current.length && c.t === current[current.length - 1].t + width;
    if (c.vwap === null || (current.length && !adjacent)) {
      if (current.length) out.push(current);
      current = [];
    }
    if (c.vwap !== null) current.push(c);
  }
  if (current.length) out.push(current);
  return out;
}

function niceTicks(lo, hi, count) {
  const raw = (hi - lo) / count;
  const step = [1, 2, 2.5, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(raw)))
    .find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

function axisLabel(ms, span) {
  const iso = new Date(ms).toISOString();
  if (span > 2 * 86400e3) return iso.slice(5, 10) + " " + iso.slice(11, 16);
  return iso.slice(11, 16);
}
