// The billing card's chart: spend per bucket as bars, market and base load stacked, drawn on a
// canvas (no library: the page loads nothing from elsewhere). After each draw the canvas
// carries data-bars (buckets drawn), data-total (USD, both kinds) and data-axis (the amounts
// written on the axis), which the browser test reads beside the pixels.

const KINDS = ["market", "base_load"];

// rows: the billing endpoint's rows {start, amount_usd, kind}; buckets: every bucket start
// (ms) of the range, oldest first, so a quiet hour still takes its place.
export function drawSpend(canvas, rows, buckets, widthMs) {
  const totals = new Map(buckets.map((t) => [t, { market: 0, base_load: 0 }]));
  for (const row of rows) {
    const t = Date.parse(row.start);
    if (!totals.has(t)) totals.set(t, { market: 0, base_load: 0 });
    totals.get(t)[row.kind] += row.amount_usd;
  }
  const starts = [...totals.keys()].sort((a, b) => a - b);
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth, height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const style = getComputedStyle(document.documentElement);
  const color = (name) => style.getPropertyValue(name).trim();
  const pad = { left: 56, right: 8, top: 8, bottom: 20 };
  const w = width - pad.left - pad.right, h = height - pad.top - pad.bottom;
  const top = Math.max(...starts.map((t) => totals.get(t).market + totals.get(t).base_load), 0);
  const scale = top > 0 ? h / top : 0;
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = color("--muted");
  ctx.strokeStyle = color("--line");
  // nothing billed: one line at zero and a word, not three lines all reading 0.00
  const steps = top > 0 ? [0, 0.5, 1] : [0];
  for (const f of steps) {
    const y = pad.top + h - f * h;
    ctx.beginPath();
    ctx.moveTo(pad.left, y);
    ctx.lineTo(pad.left + w, y);
    ctx.stroke();
    ctx.fillText((top * f).toFixed(2), 4, y + 4);
  }
  canvas.dataset.axis = steps.map((f) => (top * f).toFixed(2)).join(" / ");
  if (top === 0) {
    const words = "nothing billed in this range";
    ctx.fillText(words, pad.left + (w - ctx.measureText(words).width) / 2, pad.top + h / 2);
  }
  const slot = starts.length ? w / starts.length : w;
  starts.forEach((t, i) => {
    let y = pad.top + h;
    for (const kind of KINDS) {
      const bar = totals.get(t)[kind] * scale;
      if (bar <= 0) continue;
      ctx.fillStyle = color(`--${kind.replace("_", "-")}`);
      ctx.fillRect(pad.left + i * slot + slot * 0.1, y - bar, Math.max(slot * 0.8, 1), bar);
      y -= bar;
    }
  });
  ctx.fillStyle = color("--muted");
  if (starts.length) {
    const label = (t) => new Date(t).toISOString().slice(5, widthMs >= 864e5 ? 10 : 16)
      .replace("T", " ");
    ctx.fillText(label(starts[0]), pad.left, height - 4);
    const last = label(starts[starts.length - 1]);
    ctx.fillText(last, pad.left + w - ctx.measureText(last).width, height - 4);
  }
  canvas.dataset.bars = String(starts.filter((t) => totals.get(t).market + totals.get(t).base_load > 0).length);
  canvas.dataset.total = String(rows.reduce((sum, row) => sum + row.amount_usd, 0));
}
