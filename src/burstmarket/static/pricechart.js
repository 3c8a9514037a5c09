// A small canvas chart of one island's prices: the vwap line over the min–max band, with the
// reserve price dashed. No library: the page ships with the package and loads nothing else.
// After each draw the canvas carries data-points (ticks drawn with a vwap) and data-last-tick,
// which is how the browser test sees that the chart drew and moved.
"use strict";

class PriceChart {
  constructor(canvas) {
    this.canvas = canvas;
    this.points = [];
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  // points: [{tick, t (ms), vwap, min, max, reserve}], oldest first
  update(points) {
    this.points = points;
    this.draw();
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
    const pts = this.points;
    const priced = pts.filter((p) => p.vwap !== null);
    canvas.dataset.points = String(priced.length);
    canvas.dataset.lastTick = String(pts.length ? pts[pts.length - 1].tick : 0);
    const style = getComputedStyle(document.documentElement);
    const color = (name) => style.getPropertyValue(name).trim();
    const pad = { left: 48, right: 10, top: 10, bottom: 22 };
    const w = width - pad.left - pad.right, h = height - pad.top - pad.bottom;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = color("--muted");
    if (!pts.length) {
      ctx.fillText("waiting for ticks…", pad.left, pad.top + h / 2);
      return;
    }
    let lo = Infinity, hi = -Infinity;
    for (const p of pts) {
      for (const v of [p.min, p.max, p.vwap, p.reserve]) {
        if (v !== null && v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      }
    }
    if (hi - lo < 0.02) { lo -= 0.05; hi += 0.05; }
    const margin = (hi - lo) * 0.08;
    lo = Math.max(0, lo - margin); hi += margin;
    const t0 = pts[0].t, t1 = Math.max(pts[pts.length - 1].t, t0 + 1);
    const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * w;
    const y = (v) => pad.top + (1 - (v - lo) / (hi - lo)) * h;

    // grid and axis labels
    ctx.strokeStyle = color("--line");
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const v of niceTicks(lo, hi, 5)) {
      ctx.beginPath(); ctx.moveTo(pad.left, y(v)); ctx.lineTo(pad.left + w, y(v)); ctx.stroke();
      ctx.fillText(v.toFixed(2), pad.left - 6, y(v));
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const labels = Math.max(2, Math.floor(w / 110));
    for (let i = 0; i <= labels; i++) {
      const t = t0 + ((t1 - t0) * i) / labels;
      ctx.textAlign = i === 0 ? "left" : i === labels ? "right" : "center";
      ctx.fillText(clock(t, t1 - t0), x(t), pad.top + h + 6);
    }

    // the min–max band, one polygon per run of priced ticks
    ctx.fillStyle = color("--band");
    for (const run of runs(pts)) {
      ctx.beginPath();
      run.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p.max)) : ctx.moveTo(x(p.t), y(p.max))));
      for (let i = run.length - 1; i >= 0; i--) ctx.lineTo(x(run[i].t), y(run[i].min));
      ctx.closePath();
      ctx.fill();
    }
    // the reserve price, a step line
    ctx.strokeStyle = color("--reserve");
    ctx.setLineDash([5, 4]);
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    pts.forEach((p, i) => {
      if (i) ctx.lineTo(x(p.t), y(pts[i - 1].reserve));
      (i ? ctx.lineTo : ctx.moveTo).call(ctx, x(p.t), y(p.reserve));
    });
    ctx.stroke();
    ctx.setLineDash([]);
    // the vwap line, with a dot on the latest tick
    ctx.strokeStyle = color("--vwap");
    ctx.lineWidth = 2;
    for (const run of runs(pts)) {
      ctx.beginPath();
      run.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p.vwap)) : ctx.moveTo(x(p.t), y(p.vwap))));
      if (run.length === 1) ctx.arc(x(run[0].t), y(run[0].vwap), 2, 0, 2 * Math.PI);
      ctx.stroke();
    }
    const last = priced[priced.length - 1];
    if (last) {
      ctx.fillStyle = color("--vwap");
      ctx.beginPath(); ctx.arc(x(last.t), y(last.vwap), 3.5, 0, 2 * Math.PI); ctx.fill();
    }
  }
}

// consecutive points that have a vwap (a tick with no market holdings breaks the line)
function runs(points) {
  const out = [];
  let current = [];
  for (const p of points) {
    if (p.vwap === null) { if (current.length) out.push(current); current = []; }
    else current.push(p);
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

function clock(ms, span) {
  const iso = new Date(ms).toISOString();
  if (span > 2 * 86400e3) return iso.slice(5, 10) + " " + iso.slice(11, 16);
  return span < 600e3 ? iso.slice(11, 19) : iso.slice(11, 16);
}
