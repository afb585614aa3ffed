// The style and the script of the report page, inlined in every page: the
// page needs nothing from the network, and opens from disk in any current
// browser. The script draws the lanes on a canvas from the data the page
// carries (a JSON block) and builds a label per lane in the DOM.
#include "report_assets.hpp"

namespace posixtrace::cli {

const char *report_style()
{
    return R"CSS(
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { padding: 12px 16px 4px; }
h1 { font-size: 18px; margin: 0 0 4px; }
.note { background: #fff3cd; border: 1px solid #e0c060; padding: 6px 10px; margin: 6px 16px; }
.lossnote { background: #fde2e2; border: 1px solid #d33; padding: 6px 10px; margin: 6px 16px; }
details { margin: 4px 16px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #e4e4e4; }
th:first-child, td:first-child { text-align: left; }
#controls { padding: 6px 16px; display: flex; gap: 12px; align-items: center; }
#controls input { width: 260px; padding: 3px 6px; }
#legend span { display: inline-block; margin-right: 10px; }
#legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px; vertical-align: middle; }
#timeline { display: flex; border-top: 1px solid #ccc; border-bottom: 1px solid #ccc; background: #fff; }
#labels { flex: 0 0 220px; overflow: hidden; border-right: 1px solid #ccc; }
#labels .axis-pad { height: 34px; }
#labels .process { height: 18px; font-weight: 600; background: #eef; padding: 0 6px; white-space: nowrap; overflow: hidden; }
#labels .lane { height: 18px; padding: 0 6px 0 16px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#canvas-box { flex: 1 1 auto; position: relative; overflow: hidden; cursor: grab; }
canvas { display: block; }
#tip { position: fixed; pointer-events: none; background: #222; color: #fff; padding: 4px 8px; border-radius: 3px; font: 12px monospace; white-space: pre; display: none; max-width: 640px; z-index: 2; }
)CSS";
}

const char *report_script()
{
    return R"JS(
'use strict';
const data = JSON.parse(document.getElementById('trace-data').textContent);
const COLORS = { running: '#2e9d4a', runnable: '#f0b429', sleeping: '#d9dde3',
                 'waiting for a lock': '#c2410c', stopped: '#7c3aed', exited: '#9ca3af' };
const LANE = 18, AXIS = 34;
const box = document.getElementById('canvas-box');
const canvas = document.getElementById('canvas');
const labels = document.getElementById('labels');
const tip = document.getElementById('tip');
const filterBox = document.getElementById('filter');
let view = { t0: 0, t1: Math.max(data.span_ns, 1) };
let rows = [];

function kindColor(kind) {
  let h = 0;
  for (const c of data.kinds[kind]) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return 'hsl(' + (h % 360) + ',70%,42%)';
}

function laneMarkers(lane) {
  if (lane.density) return lane.density.reduce((a, b) => a + b, 0);
  return lane.markers.length / 3;
}

function matches(lane, text) {
  if (!text) return true;
  const t = text.toLowerCase();
  if ((lane.name + ' ' + lane.tid).toLowerCase().includes(t)) return true;
  for (let i = 1; i < lane.markers.length; i += 3)
    if (data.kinds[lane.markers[i]].toLowerCase().includes(t)) return true;
  return false;
}

function kindShown(kind) {
  const t = filterBox.value.toLowerCase();
  if (!t) return true;
  const any = data.kinds.some(k => k.toLowerCase().includes(t));
  return !any || data.kinds[kind].toLowerCase().includes(t);
}

function layout() {
  rows = [];
  labels.innerHTML = '<div class="axis-pad"></div>';
  const text = filterBox.value;
  for (const proc of data.processes) {
    const lanes = data.lanes.filter(l => l.pid === proc.pid && matches(l, text));
    if (!lanes.length) continue;
    const head = document.createElement('div');
    head.className = 'process';
    head.textContent = proc.name + ' (pid ' + proc.pid + ')';
    labels.appendChild(head);
    rows.push({ process: proc });
    for (const lane of lanes) {
      const label = document.createElement('div');
      label.className = 'lane';
      label.dataset.tid = lane.tid;
      label.dataset.markers = laneMarkers(lane);
      label.title = lane.renames.length ? 'also named: ' + lane.renames.join(', ') : '';
      label.textContent = (lane.name || '?') + ' ' + lane.tid;
      labels.appendChild(label);
      rows.push({ lane: lane });
    }
  }
  resize();
}

function resize() {
  const ratio = window.devicePixelRatio || 1;
  const width = box.clientWidth, height = AXIS + rows.length * LANE + 4;
  canvas.width = width * ratio; canvas.height = height * ratio;
  canvas.style.width = width + 'px'; canvas.style.height = height + 'px';
  canvas.getContext('2d').setTransform(ratio, 0, 0, ratio, 0, 0);
  draw();
}

const xOf = (t, w) => (t - view.t0) / (view.t1 - view.t0) * w;
const tOf = (x, w) => view.t0 + x / w * (view.t1 - view.t0);

function firstAtOrAfter(array, stride, field, t) {
  let lo = 0, hi = array.length / stride;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (array[mid * stride + field] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function niceStep(span) {
  const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function formatDelta(ns) {
  if (Math.abs(ns) >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (Math.abs(ns) >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (Math.abs(ns) >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
  return ns.toFixed(0) + ' ns';
}

function realTime(ns) {
  const total = BigInt(data.start_ns) + BigInt(Math.round(ns));
  const ms = Number(total / 1000000n), rest = Number(total % 1000000n);
  return new Date(ms).toISOString().replace('Z', '') + String(rest).padStart(6, '0') + ' UTC';
}

function drawAxis(ctx, w) {
  ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, w, AXIS);
  ctx.fillStyle = '#333'; ctx.font = '11px sans-serif';
  ctx.fillText(realTime(view.t0), 4, 12);
  const step = niceStep(view.t1 - view.t0);
  for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
    const x = xOf(t, w);
    ctx.fillRect(x, 22, 1, 12);
    ctx.fillText('+' + formatDelta(t), x + 3, 31);
  }
}

function drawSpans(ctx, lane, y, w) {
  const s = lane.spans, n = s.length / 4;
  let i = Math.max(0, firstAtOrAfter(s, 4, 1, view.t0));
  let lastX = -1;
  for (; i < n; i++) {
    const b = s[i * 4], e = s[i * 4 + 1];
    if (b > view.t1) break;
    const x0 = Math.max(0, xOf(b, w)), x1 = Math.min(w, xOf(e, w));
    if (x1 < lastX && x1 - x0 < 1) continue; // below a pixel already drawn
    ctx.fillStyle = COLORS[data.states[s[i * 4 + 2]]];
    ctx.fillRect(x0, y + 3, Math.max(x1 - x0, 0.6), LANE - 6);
    lastX = Math.floor(x1) + 1;
  }
}

function drawMarkers(ctx, lane, y, w) {
  if (lane.density) {
    const max = Math.max(1, ...lane.density), width = data.span_ns / lane.density.length;
    ctx.fillStyle = '#1d4ed8';
    lane.density.forEach((count, b) => {
      if (!count) return;
      const x0 = xOf(b * width, w), x1 = xOf((b + 1) * width, w);
      if (x1 < 0 || x0 > w) return;
      const h = Math.max(2, (LANE - 4) * count / max);
      ctx.fillRect(x0, y + LANE - 2 - h, Math.max(1, x1 - x0), h);
    });
    return;
  }
  const m = lane.markers;
  for (let i = firstAtOrAfter(m, 3, 0, view.t0); i < m.length / 3; i++) {
    const t = m[i * 3];
    if (t > view.t1) break;
    if (!kindShown(m[i * 3 + 1])) continue;
    const x = xOf(t, w);
    ctx.fillStyle = kindColor(m[i * 3 + 1]);
    ctx.beginPath(); ctx.moveTo(x, y + 2); ctx.lineTo(x + 4, y + 9); ctx.lineTo(x - 4, y + 9);
    ctx.fill();
  }
}

function drawProcessRow(ctx, proc, y, w) {
  ctx.fillStyle = '#eef'; ctx.fillRect(0, y, w, LANE);
  ctx.font = '11px sans-serif';
  for (const [t, pid, kind] of data.process_marks) {
    if (pid !== proc.pid || t < view.t0 || t > view.t1) continue;
    const x = xOf(t, w);
    ctx.fillStyle = kind === 'exit' ? '#991b1b' : kind === 'exec' ? '#1d4ed8' : '#15803d';
    ctx.fillRect(x - 1, y + 2, 3, LANE - 4);
    ctx.fillText(kind, x + 4, y + 13);
  }
}

function drawLosses(ctx, w, h) {
  ctx.font = 'bold 11px sans-serif';
  for (const [t, , lost] of data.losses) {
    if (t < view.t0 || t > view.t1) continue;
    const x = xOf(t, w);
    ctx.fillStyle = 'rgba(220,0,0,0.85)'; ctx.fillRect(x - 1, AXIS, 2, h - AXIS);
    ctx.fillText(lost + ' lost', x + 3, AXIS + 10);
  }
}

function draw() {
  const ctx = canvas.getContext('2d');
  const w = box.clientWidth, h = AXIS + rows.length * LANE + 4;
  ctx.clearRect(0, 0, w, h);
  drawAxis(ctx, w);
  rows.forEach((row, r) => {
    const y = AXIS + r * LANE;
    if (row.process) { drawProcessRow(ctx, row.process, y, w); return; }
    drawSpans(ctx, row.lane, y, w);
    drawMarkers(ctx, row.lane, y, w);
  });
  drawLosses(ctx, w, h);
}

function describe(x, y) {
  const w = box.clientWidth, r = Math.floor((y - AXIS) / LANE), t = tOf(x, w);
  if (y < AXIS) return realTime(t) + '\n+' + formatDelta(t);
  const row = rows[r];
  if (!row) return null;
  for (const [lt, tid, lost, kernel, stream] of data.losses)
    if (Math.abs(xOf(lt, w) - x) <= 3)
      return lost + ' events lost (' + kernel + ' in the kernel, ' + stream + ' in the stream)' +
             (tid ? ' about thread ' + tid : '') + '\n+' + formatDelta(lt);
  if (row.process) {
    for (const [pt, pid, kind, text] of data.process_marks)
      if (pid === row.process.pid && Math.abs(xOf(pt, w) - x) <= 4)
        return kind + ': ' + text + '\n+' + formatDelta(pt);
    return row.process.name + ' (pid ' + row.process.pid + ')';
  }
  const lane = row.lane, m = lane.markers;
  let best = -1, bestDx = 6;
  for (let i = Math.max(0, firstAtOrAfter(m, 3, 0, tOf(x - 6, w))); i < m.length / 3; i++) {
    const dx = Math.abs(xOf(m[i * 3], w) - x);
    if (m[i * 3] > tOf(x + 6, w)) break;
    if (dx < bestDx && kindShown(m[i * 3 + 1])) { best = i; bestDx = dx; }
  }
  if (best >= 0)
    return data.kinds[m[best * 3 + 1]] + '  +' + formatDelta(m[best * 3]) + '\n' +
           data.details[m[best * 3 + 2]];
  const s = lane.spans;
  const i = firstAtOrAfter(s, 4, 1, t);
  if (i < s.length / 4 && s[i * 4] <= t) {
    const cpu = s[i * 4 + 3];
    return lane.name + ' ' + lane.tid + ': ' + data.states[s[i * 4 + 2]] +
           (cpu >= 0 ? ' on CPU ' + cpu : '') + ' for ' + formatDelta(s[i * 4 + 1] - s[i * 4]);
  }
  return lane.name + ' ' + lane.tid;
}

let drag = null;
box.addEventListener('mousedown', e => { drag = { x: e.clientX, t0: view.t0, t1: view.t1 }; });
window.addEventListener('mouseup', () => { drag = null; });
box.addEventListener('mousemove', e => {
  const rect = box.getBoundingClientRect();
  if (drag) {
    const dt = (e.clientX - drag.x) / box.clientWidth * (drag.t1 - drag.t0);
    view = { t0: drag.t0 - dt, t1: drag.t1 - dt };
    draw();
    return;
  }
  const text = describe(e.clientX - rect.left, e.clientY - rect.top);
  if (!text) { tip.style.display = 'none'; return; }
  tip.textContent = text; tip.style.display = 'block';
  tip.style.left = (e.clientX + 14) + 'px'; tip.style.top = (e.clientY + 14) + 'px';
});
box.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
box.addEventListener('wheel', e => {
  e.preventDefault();
  const rect = box.getBoundingClientRect(), w = box.clientWidth;
  const at = tOf(e.clientX - rect.left, w), k = Math.exp(e.deltaY * 0.002);
  const span = Math.max(1000, (view.t1 - view.t0) * k);
  const f = (at - view.t0) / (view.t1 - view.t0);
  view = { t0: at - f * span, t1: at - f * span + span };
  draw();
}, { passive: false });
document.getElementById('reset').addEventListener('click', () => {
  view = { t0: 0, t1: Math.max(data.span_ns, 1) }; draw();
});
filterBox.addEventListener('input', layout);
window.addEventListener('resize', resize);
const legend = document.getElementById('legend');
for (const [name, color] of Object.entries(COLORS)) {
  const item = document.createElement('span');
  item.innerHTML = '<i style="background:' + color + '"></i>' + name;
  legend.appendChild(item);
}
layout();
// What was drawn, for a headless browser to check (the tests read the DOM).
(() => {
  const ctx = canvas.getContext('2d');
  const pixels = ctx.getImageData(0, AXIS, canvas.width, Math.max(1, canvas.height - AXIS)).data;
  let painted = 0;
  for (let i = 3; i < pixels.length; i += 4) painted += pixels[i] !== 0;
  document.body.dataset.paintedPixels = painted;
  document.body.dataset.rendered = 'yes';
  document.body.dataset.loadMs = performance.now().toFixed(0);
})();
// Opened with #measure (bench/log_bench.sh), the page times its own redraws:
// zooming from the whole trace down to a millionth of it, and a filter.
if (location.hash === '#measure') {
  const timed = f => { const t = performance.now(); f(); return performance.now() - t; };
  const span = Math.max(data.span_ns, 1), redraws = [];
  for (let k = 0; k <= 30; k++) {
    const width = span / Math.pow(10, k / 5), mid = span / 2;
    view = { t0: mid - width / 2, t1: mid + width / 2 };
    redraws.push(timed(draw));
  }
  filterBox.value = 'a';
  const filterMs = timed(layout);
  filterBox.value = '';
  layout();
  const body = document.body.dataset;
  body.redrawMaxMs = Math.max(...redraws).toFixed(1);
  body.redrawMeanMs = (redraws.reduce((a, b) => a + b, 0) / redraws.length).toFixed(1);
  body.filterMs = filterMs.toFixed(1);
}
)JS";
}

} // namespace posixtrace::cli
