// Stacked bar charts over time with uPlot: one bar per window, one colour per value of the chosen
// dimension (the largest few, the rest as "other").
import uPlot from './vendor/uPlot.esm.js';
import { h } from './dom.js';

const COLORS = ['#1f5fbf', '#e07b00', '#1a7f37', '#b42318', '#6e40c9', '#0a7e8c', '#a05a00', '#c2185b', '#5b6470'];
/** One colour per value for the whole session, so that a provider looks the same in every chart. */
const assigned = new Map();
const colorOf = (label) => {
  if (!assigned.has(label)) assigned.set(label, COLORS[assigned.size % COLORS.length]);
  return assigned.get(label);
};
const MAX_SERIES = 8;

/**
 * `times`: window starts (Unix seconds); `series`: [{label, values}] aligned with times;
 * `format`: a value for people. Returns the element holding the chart.
 */
export function stackedChart(title, name, times, series, format, timeZone) {
  const totals = series.map((s) => s.values.reduce((a, b) => a + b, 0));
  const ranked = series.map((s, i) => ({ ...s, total: totals[i] })).sort((a, b) => b.total - a.total);
  const shown = ranked.slice(0, MAX_SERIES);
  if (ranked.length > MAX_SERIES) {
    const rest = ranked.slice(MAX_SERIES);
    shown.push({ label: `other (${rest.length})`, values: times.map((_, t) => rest.reduce((sum, s) => sum + s.values[t], 0)) });
  }
  // Cumulative values drawn tallest first, so that each bar shows through the ones above it.
  const cumulative = [];
  for (const [i, s] of shown.entries()) cumulative.push(s.values.map((v, t) => v + (i > 0 ? cumulative[i - 1][t] : 0)));
  const order = shown.map((_, i) => i).reverse();
  const box = h('div', { class: 'chart', 'data-chart': name, role: 'img', 'aria-label': `${title}: stacked by ${shown.map((s) => s.label).join(', ')}` });
  box.dataset.series = String(shown.length);
  box.dataset.points = String(shown.reduce((n, s) => n + s.values.filter((v) => v !== 0).length, 0));
  const section = h('section', { class: 'chart-section' }, h('h2', {}, title), box);
  if (times.length === 0 || shown.length === 0) {
    box.append(h('p', { class: 'notice empty' }, 'Nothing in this range.'));
    return section;
  }
  const bars = uPlot.paths.bars({ size: [0.8, 48] });
  const step = times.length > 1 ? Math.min(...times.slice(1).map((t, i) => t - times[i])) : 3600;
  const opts = {
    width: 600,
    height: 280,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
    cursor: { points: { show: false } },
    legend: { live: true },
    // Half a window of room either side, so that the first and last bars are whole.
    scales: { x: { time: true, range: (_u, min, max) => [min - step / 2, max + step / 2] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] } },
    axes: [{}, { values: (_u, ticks) => ticks.map(format), size: 80 }],
    series: [
      { label: 'window' },
      ...order.map((i) => ({
        label: shown[i].label,
        stroke: colorOf(shown[i].label),
        fill: colorOf(shown[i].label),
        width: 0,
        paths: bars,
        points: { show: false },
        value: (_u, _v, _si, idx) => (idx === null || idx === undefined ? '' : format(shown[i].values[idx])),
      })),
    ],
  };
  const plot = new uPlot(opts, [times, ...order.map((i) => cumulative[i])], box);
  const fit = () => plot.setSize({ width: Math.max(260, box.clientWidth - 10), height: 280 });
  new ResizeObserver(fit).observe(box);
  requestAnimationFrame(fit);
  return section;
}
