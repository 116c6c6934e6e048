// Line charts of time series, drawn as SVG by hand (no library: the console works offline).

import { el, svg, fmtClock } from './dom.js';

// Colours of the series, in order (colour-blind friendly: Okabe-Ito).
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#F0E442', '#000000'];

const W = 640;
const H = 220;
const M = { left: 60, right: 14, top: 12, bottom: 26 };

// niceStep is a round step (1, 2 or 5 times a power of ten) that cuts max into about n parts.
function niceStep(max, n) {
  const raw = max / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}

function fmtAxis(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(v % 1e6 ? 1 : 0) + 'M';
  if (v >= 1e3) return (v / 1e3).toFixed(v % 1e3 ? 1 : 0) + 'k';
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

// lineChart draws series [{name, points: [[t, v], ...]}] over the window that ends at now (ms). opts.id
// names the figure; opts.unit is shown on the y axis. The figure carries data-series (how many series) and
// each line data-name, data-last (its newest value) and data-max (its highest), for the tests and for people
// reading the page's source.
export function lineChart(series, now, windowMs, opts) {
  opts = opts || {};
  const x0 = now - windowMs;
  let ymax = 0;
  for (const s of series) for (const [, v] of s.points) ymax = Math.max(ymax, v);
  const step = ymax > 0 ? niceStep(ymax, 4) : 1;
  const ytop = Math.max(step, Math.ceil(ymax / step) * step);
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const X = (t) => M.left + ((t - x0) / windowMs) * pw;
  const Y = (v) => M.top + ph - (v / ytop) * ph;

  const grid = [];
  for (let v = 0; v <= ytop + step / 2; v += step) {
    grid.push(svg('line', { x1: M.left, x2: W - M.right, y1: Y(v), y2: Y(v), class: 'grid' }));
    grid.push(svg('text', { x: M.left - 6, y: Y(v) + 4, class: 'tick', 'text-anchor': 'end' }, fmtAxis(v)));
  }
  for (let i = 0; i <= 4; i++) {
    const t = x0 + (windowMs * i) / 4;
    grid.push(svg('text', { x: X(t), y: H - 8, class: 'tick', 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle' }, fmtClock(t)));
  }
  const lines = series.map((s, i) => {
    const pts = s.points.filter(([t]) => t >= x0).map(([t, v]) => `${X(t).toFixed(1)},${Y(v).toFixed(1)}`).join(' ');
    const last = s.points.length ? s.points[s.points.length - 1][1] : '';
    const top = s.points.length ? Math.max(...s.points.map(([, v]) => v)) : '';
    return svg('polyline', { points: pts, class: 'line', stroke: COLOURS[i % COLOURS.length], dataset: { name: s.name, last: String(last), max: String(top) } });
  });
  const plot = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': opts.title || 'chart' },
    grid,
    svg('line', { x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph, class: 'axis' }),
    svg('line', { x1: M.left, x2: W - M.right, y1: M.top + ph, y2: M.top + ph, class: 'axis' }),
    opts.unit ? svg('text', { x: 12, y: M.top + ph / 2, class: 'unit', transform: `rotate(-90 12 ${M.top + ph / 2})`, 'text-anchor': 'middle' }, opts.unit) : null,
    lines);
  const legend = el('ul', { class: 'legend' }, series.map((s, i) =>
    el('li', null, el('span', { class: 'swatch', dataset: { colour: String(i % COLOURS.length) } }), s.name)));
  const empty = series.every((s) => s.points.length === 0)
    ? el('p', { class: 'muted' }, 'No samples yet: the console samples every few seconds.') : null;
  return el('figure', { class: 'figure', id: opts.id, dataset: { series: String(series.length) } },
    opts.title ? el('figcaption', null, opts.title) : null, plot, legend, empty);
}
