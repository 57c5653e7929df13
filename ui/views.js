// The views. Each gets the state from the URL, the API range, the server's optional features, an
// element to fill, its render's signal (every fetch takes it: leaving the view aborts them) and
// `retry` (renders it again); every table has a CSV download; numbers are formatted by kind.
import { all, get } from './api.js';
import { stackedChart } from './chart.js';
import { cards, failure, h, notice, table, unavailable } from './dom.js';
import { bytes, byteHours, count, decimalSum, instant, money, share } from './format.js';

const DIMENSIONS = ['provider', 'bucket', 'customerId', 'featureId', 'clientType', 'clientId', 'action'];
const USAGE_MEASURES = {
  requests: ['Requests', count],
  readBytes: ['Bytes read', bytes],
  billableEgressBytes: ['Billable egress', bytes],
  writtenBytes: ['Bytes written', bytes],
};
/** At the window's end, but storedByteHours (over the window). */
const STORAGE_MEASURES = {
  storedBytes: ['Stored bytes', bytes],
  storedByteHours: ['Stored byte-hours', byteHours],
  objects: ['Objects', count],
  deleteMarkers: ['Delete markers', count],
  unknownSizeObjects: ['Objects of unknown size', count],
  incompleteUploadBytes: ['Incomplete uploads', bytes],
};
const UNALLOCATED = '(unallocated)';
const NONE = '(none)';

const label = (v) => (v === null || v === undefined ? NONE : v);
/** A cost row's value of `dim`: account-level amounts no key used are named as such. */
const costLabel = (row, dim) => (row.unallocated && (row[dim] === null || row[dim] === undefined) ? UNALLOCATED : label(row[dim]));
const seconds = (iso) => Date.parse(iso) / 1000;

function measuresOf(features) {
  return features.storage ? { ...USAGE_MEASURES, ...STORAGE_MEASURES } : USAGE_MEASURES;
}

/**
 * /v1/usage, every page; with the stored-bytes measures where the server has them and `storage` is
 * true. Ask for them only where they are shown: grouped by some dimensions they read the whole
 * inventory history (seconds at millions of events).
 */
function usage(ctx, params, storage) {
  return all('/v1/usage', { ...params, ...(storage && ctx.features.storageParam ? { storage: 'true' } : {}) }, 'rows', ctx.signal);
}

const isStored = (metric) => metric in STORAGE_MEASURES;

/** Rows of one window series per value of `by`: {times, series:[{label, values}]}. */
function pivot(rows, by, value, name = (row) => label(row[by])) {
  const times = [...new Set(rows.map((r) => seconds(r.start)))].sort((a, b) => a - b);
  const index = new Map(times.map((t, i) => [t, i]));
  const series = new Map();
  for (const row of rows) {
    const key = name(row);
    if (!series.has(key)) series.set(key, new Array(times.length).fill(0));
    series.get(key)[index.get(seconds(row.start))] += value(row);
  }
  return { times, series: [...series].map(([name, values]) => ({ label: name, values })) };
}

/** The currency most cost rows are in; a tenant with plans in several currencies sees each total. */
function mainCurrency(rows) {
  const counts = new Map();
  // Unpriced rows (a provider with no plan) have no currency and cost 0.
  for (const r of rows) if (r.currency) counts.set(r.currency, (counts.get(r.currency) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
}

function costCards(rows) {
  const currencies = [...new Set(rows.map((r) => r.currency).filter(Boolean))];
  return currencies.map((c) => [`Total cost (${c})`, money(decimalSum(rows.filter((r) => r.currency === c).map((r) => r.totalCost)), c), `cost-${c}`]);
}

function selectOf(name, labelText, options, value, onChange) {
  const select = h('select', { name }, options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));
  select.addEventListener('change', () => onChange(select.value));
  return h('label', {}, labelText, select);
}

/** A slot filled when its data arrives, so that the first numbers show without waiting for the rest. */
function slot(view, name) {
  const el = h('div', { 'data-slot': name }, h('p', { class: 'muted' }, 'Loading…'));
  view.append(el);
  return el;
}

async function fill(el, ctx, work) {
  try {
    const content = await work();
    if (!ctx.signal.aborted) el.replaceChildren(...[content].flat());
  } catch (error) {
    if (error.status === 401 || error.status === 403) throw error;
    if (ctx.signal.aborted) return;
    if (error.code === 'BM_ERR_COST_NOT_READY') askAgain(el, ctx, work, error.retryAfter ?? 10);
    else el.replaceChildren(failure(error, ctx.retry));
  }
}

/**
 * Costs the server is still pricing (a large month's first pricing takes minutes, and goes on after
 * its 503): the slot says so and asks again after Retry-After, for as long as this view is shown.
 * The rest of the view is not held back by it.
 */
function askAgain(el, ctx, work, seconds) {
  el.replaceChildren(notice(`Costs not priced yet: the server is pricing these months for the first time since they changed (minutes on a large store). Asking again in ${seconds} s.`, 'pending'));
  const timer = setTimeout(() => {
    // A key revoked meanwhile: the whole view again, which signs out.
    fill(el, ctx, work).catch(() => ctx.retry());
  }, seconds * 1000);
  ctx.signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}

function usageColumns(measures, shareOf, total) {
  return [
    ...Object.entries(measures).map(([m, [text, format]]) => ({ label: text, value: (r) => r[m], show: (r) => format(r[m]), num: true })),
    ...(shareOf ? [{ label: `Share of ${measures[shareOf]?.[0] ?? shareOf}`, value: (r) => (total > 0 ? ((100 * r[shareOf]) / total).toFixed(1) : ''), show: (r) => shareCell(r[shareOf], total), num: true }] : []),
  ];
}

function shareCell(part, total) {
  const bar = h('span', { class: 'share', 'aria-hidden': 'true' });
  bar.style.width = `${total > 0 ? Math.round((60 * part) / total) : 0}px`;
  return h('span', {}, share(part, total), bar);
}

async function overview(ctx) {
  const { state, range, features, view } = ctx;
  const by = state.params.get('by') || 'provider';
  const measures = measuresOf(features);
  const metric = measures[state.params.get('metric')] ? state.params.get('metric') : 'requests';
  const [metricLabel, metricFormat] = measures[metric];
  view.append(
    h('h1', {}, 'Overview'),
    h(
      'div',
      { class: 'filters' },
      selectOf('by', 'Stack by', DIMENSIONS.map((d) => [d, d]), by, (v) => ctx.go('overview', '', { by: v })),
      selectOf('metric', 'Usage measure', Object.entries(measures).map(([m, [text]]) => [m, text]), metric, (v) => ctx.go('overview', '', { metric: v })),
    ),
  );
  const costTotals = features.costs ? slot(view, 'cost-totals') : null;
  const totals = slot(view, 'totals');
  const costChart = slot(view, 'cost-chart');
  const usageChart = slot(view, 'usage-chart');
  const tops = h('div', { class: 'grid2' });
  view.append(tops);
  const topSlots = [
    ['customerId', 'Top customers'],
    ['featureId', 'Top features'],
    ['clientId', 'Top clients'],
    ['bucket', 'Top buckets'],
  ].map(([dim, title]) => {
    const el = h('div', { 'data-slot': `top-${dim}` }, h('p', { class: 'muted' }, 'Loading…'));
    tops.append(el);
    return { el, dim, title };
  });
  // The usage totals first, alone: pricing runs on the server's event loop, and a month of millions
  // of events priced beside them would hold the first numbers back for seconds. Then the rest at once.
  const shownTotals = fill(totals, ctx, async () => {
    const row = (await usage(ctx, { ...range, granularity: 'none' }, true))[0] ?? {};
    const shown = cards(Object.entries(measures).map(([m, [text, format]]) => [text, format(row[m] ?? 0), m]));
    // "Overview interactive": the first numbers are on the page (the browser test reads this mark).
    requestAnimationFrame(() => performance.mark('bm-overview-numbers'));
    return shown;
  });
  await shownTotals;
  const work = [
    ...(costTotals ? [fill(costTotals, ctx, async () => cards(costCards((await get('/v1/costs', { ...range, granularity: 'none' }, ctx.signal)).rows)))] : []),
    fill(costChart, ctx, async () => {
      if (!features.costs) return unavailable('Cost over time (GET /v1/costs)');
      const rows = (await get('/v1/costs', { ...range, groupBy: by }, ctx.signal)).rows;
      const currency = mainCurrency(rows);
      const own = rows.filter((r) => r.currency === currency);
      const { times, series } = pivot(own, by, (r) => Number(r.totalCost), (r) => costLabel(r, by));
      return stackedChart(`Cost over time by ${by}${currency ? ` (${currency})` : ''}`, 'cost', times, series, (v) => money(v, currency ?? 'USD'), range.timeZone);
    }),
    fill(usageChart, ctx, async () => {
      const rows = await usage(ctx, { ...range, groupBy: by }, isStored(metric));
      const { times, series } = pivot(rows, by, (r) => r[metric] ?? 0);
      return stackedChart(`${metricLabel} over time by ${by}`, 'usage', times, series, metricFormat, range.timeZone);
    }),
    ...topSlots.map(({ el, dim, title }) => fill(el, ctx, () => topTable(ctx, dim, title, metric))),
  ];
  await Promise.all(work);
}

/** The top values of a dimension: by cost with its share when the server prices, else by the measure. */
async function topTable(ctx, dim, title, metric) {
  const { range, features, state } = ctx;
  const measures = measuresOf(features);
  const used = await usage(ctx, { ...range, granularity: 'none', groupBy: dim }, isStored(metric));
  const byValue = new Map(used.map((r) => [label(r[dim]), { name: label(r[dim]), raw: r[dim], ...r }]));
  let rows;
  let costColumns = [];
  if (features.costs) {
    const costRows = (await get('/v1/costs', { ...range, granularity: 'none', groupBy: dim }, ctx.signal)).rows;
    const currency = mainCurrency(costRows);
    // Grouped by bucket or provider, a value has a row per plan: its cost is their exact sum.
    for (const c of costRows.filter((r) => r.currency === currency)) {
      const name = costLabel(c, dim);
      const row = byValue.get(name) ?? { name, raw: c[dim] };
      byValue.set(name, { ...row, cost: decimalSum([row.cost ?? '0', c.totalCost]) });
    }
    const total = Number(decimalSum([...byValue.values()].map((r) => r.cost ?? '0')));
    rows = [...byValue.values()].sort((a, b) => Number(b.cost ?? 0) - Number(a.cost ?? 0));
    costColumns = [
      { label: `Cost (${currency ?? '–'})`, value: (r) => r.cost ?? '0', show: (r) => money(r.cost ?? '0', currency ?? 'USD'), num: true },
      { label: 'Share of cost', value: (r) => (total > 0 ? ((100 * Number(r.cost ?? 0)) / total).toFixed(1) : ''), show: (r) => shareCell(Number(r.cost ?? 0), total), num: true },
    ];
  } else {
    rows = [...byValue.values()].sort((a, b) => (b[metric] ?? 0) - (a[metric] ?? 0));
  }
  const total = rows.reduce((sum, r) => sum + (r[metric] ?? 0), 0);
  const top = rows.slice(0, 10);
  const nameColumn = {
    label: dim,
    value: (r) => r.raw ?? '',
    show: (r) => (dim === 'customerId' && r.raw !== null ? h('a', { href: customerHref(state, r.raw) }, r.name) : r.name),
  };
  const usageShown = { [metric]: measures[metric], ...(metric === 'requests' ? {} : { requests: measures.requests }) };
  return table(title, `top-${dim}`, [nameColumn, ...costColumns, ...usageColumns(usageShown, features.costs ? null : metric, total)], top, {
    caption: rows.length > 10 ? `The 10 largest of ${rows.length}.` : undefined,
  });
}

function customerHref(state, id) {
  const keep = new URLSearchParams();
  for (const name of ['from', 'to', 'tz', 'g']) if (state.params.has(name)) keep.set(name, state.params.get(name));
  return `#/customer/${encodeURIComponent(id)}${keep.size ? `?${keep}` : ''}`;
}

async function customer(ctx) {
  const { state, range, features, view } = ctx;
  const id = state.arg;
  const input = h('input', { name: 'customer', value: id, placeholder: 'customer id', 'aria-label': 'Customer id' });
  const form = h('form', { class: 'filters' }, h('label', {}, 'Customer id', input), h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.go('customer', input.value.trim());
  });
  view.append(h('h1', {}, id ? `Customer ${id}` : 'Customer'), form);
  if (!id) {
    const list = slot(view, 'customers');
    await fill(list, ctx, () => topTable(ctx, 'customerId', 'Customers', 'requests'));
    return;
  }
  const measures = measuresOf(features);
  const metric = measures[state.params.get('metric')] ? state.params.get('metric') : 'requests';
  const [metricLabel, metricFormat] = measures[metric];
  view.append(h('div', { class: 'filters' }, selectOf('metric', 'Usage measure', Object.entries(measures).map(([m, [text]]) => [m, text]), metric, (v) => ctx.go('customer', id, { metric: v }))));
  const filter = { customerId: id };
  const totals = slot(view, 'totals');
  if (!features.costs) view.append(unavailable('Cost by feature and client (GET /v1/costs)'));
  const charts = h('div', { class: 'grid2' });
  view.append(charts);
  const chartSlot = (name) => {
    const el = h('div', { 'data-slot': name });
    charts.append(el);
    return el;
  };
  const events = slot(view, 'events');
  const costChart = (dim) => async () => {
    const rows = (await get('/v1/costs', { ...range, ...filter, groupBy: dim }, ctx.signal)).rows;
    const currency = mainCurrency(rows);
    const { times, series } = pivot(rows.filter((r) => r.currency === currency), dim, (r) => Number(r.totalCost), (r) => costLabel(r, dim));
    return stackedChart(`Cost by ${dim}${currency ? ` (${currency})` : ''}`, `cost-${dim}`, times, series, (v) => money(v, currency ?? 'USD'), range.timeZone);
  };
  const usageChart = (dim) => async () => {
    const rows = await usage(ctx, { ...range, ...filter, groupBy: dim }, isStored(metric));
    const { times, series } = pivot(rows, dim, (r) => r[metric] ?? 0);
    return stackedChart(`${metricLabel} by ${dim}`, `usage-${dim}`, times, series, metricFormat, range.timeZone);
  };
  const work = [
    fill(totals, ctx, async () => {
      const row = (await usage(ctx, { ...range, ...filter, granularity: 'none' }, true))[0] ?? {};
      const costRows = features.costs ? (await get('/v1/costs', { ...range, ...filter, granularity: 'none' }, ctx.signal)).rows : [];
      return cards([...costCards(costRows), ...Object.entries(measures).map(([m, [text, format]]) => [text, format(row[m] ?? 0), m])]);
    }),
    ...(features.costs ? [fill(chartSlot('cost-feature'), ctx, costChart('featureId')), fill(chartSlot('cost-client'), ctx, costChart('clientId'))] : []),
    fill(chartSlot('usage-feature'), ctx, usageChart('featureId')),
    fill(chartSlot('usage-client'), ctx, usageChart('clientId')),
    fill(events, ctx, async () => {
      const page = await get('/v1/events', { customerId: id, from: range.from, to: range.to, limit: 50 }, ctx.signal);
      const link = h('a', { href: `#/events?${new URLSearchParams({ ...Object.fromEntries(state.params), customerId: id })}` }, 'All of its events in the event explorer');
      return [eventsTable(page.events, range.timeZone, `Latest events of ${id}`, `customer-events`), h('p', {}, link)];
    }),
  ];
  if (features.storage) {
    work.push(
      fill(chartSlot('stored'), ctx, async () => {
        const rows = await usage(ctx, { ...range, ...filter, groupBy: 'bucket' }, true);
        const { times, series } = pivot(rows, 'bucket', (r) => r.storedBytes ?? 0);
        return stackedChart('Stored bytes by bucket', 'stored', times, series, bytes, range.timeZone);
      }),
    );
  }
  await Promise.all(work);
}

const EVENT_COLUMNS = ['timestamp', 'action', 'provider', 'bucket', 'objectKey', 'customerId', 'featureId', 'clientType', 'clientId', 'bytes', 'eventId', 'receivedAt'];

function eventsTable(events, timeZone, title, name) {
  const columns = EVENT_COLUMNS.map((c) => ({
    label: c,
    value: (e) => e[c] ?? '',
    show: (e) => (c === 'timestamp' || c === 'receivedAt' ? instant(e[c], timeZone) : c === 'bytes' ? (e.bytes === undefined ? '' : bytes(e.bytes)) : (e[c] ?? '')),
    num: c === 'bytes',
  }));
  return table(title, name, columns, events, { empty: 'No events match.' });
}

async function events(ctx) {
  const { state, range, view } = ctx;
  const action = state.params.get('action') ?? '';
  const customerId = state.params.get('customerId') ?? '';
  const actionInput = h('input', { name: 'action', value: action, placeholder: 'e.g. GetObject' });
  const customerInput = h('input', { name: 'customerId', value: customerId });
  const form = h('form', { class: 'filters', 'aria-label': 'Event filters' }, h('label', {}, 'Action', actionInput), h('label', {}, 'Customer id', customerInput), h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.go('events', '', { action: actionInput.value.trim(), customerId: customerInput.value.trim() });
  });
  view.append(h('h1', {}, 'Events'), h('p', { class: 'muted' }, 'Newest event timestamp first, within the range.'), form);
  const params = { from: range.from, to: range.to, limit: 100, ...(action ? { action } : {}), ...(customerId ? { customerId } : {}) };
  const loaded = [];
  const holder = slot(view, 'events');
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  view.append(h('div', { class: 'row-actions' }, more));
  let cursor = null;
  const load = async () => {
    const page = await get('/v1/events', { ...params, ...(cursor ? { cursor } : {}) }, ctx.signal);
    loaded.push(...page.events);
    cursor = page.nextCursor;
    more.hidden = cursor === null;
    return eventsTable(loaded, range.timeZone, `${loaded.length} events${cursor ? ' (more to load)' : ''}`, 'events');
  };
  more.addEventListener('click', () => fill(holder, ctx, load));
  await fill(holder, ctx, load);
}

/** When an object version's life began or ended (and by which kind of event). */
function when(point, timeZone) {
  if (!point) return '';
  return [instant(point.at, timeZone), point.action ?? ''].filter(Boolean).join(' · ');
}

async function objects(ctx) {
  const { state, range, features, view } = ctx;
  view.append(h('h1', {}, 'Object inventory'));
  if (!features.objects) {
    view.append(unavailable('Object inventory (GET /v1/objects)'));
    return;
  }
  const p = (name) => state.params.get(name) ?? '';
  const inputs = {
    bucket: h('input', { name: 'bucket', value: p('bucket'), required: true }),
    prefix: h('input', { name: 'prefix', value: p('prefix') }),
    at: h('input', { name: 'at', value: p('at'), placeholder: 'ISO 8601, default now' }),
    customerId: h('input', { name: 'customerId', value: p('customerId') }),
  };
  const versions = h('input', { type: 'checkbox', name: 'includeVersions', checked: p('includeVersions') === 'true' });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Inventory filters' },
    Object.entries(inputs).map(([name, input]) => h('label', {}, name, input)),
    h('label', { class: 'inline' }, versions, 'all versions'),
    h('button', { type: 'submit' }, 'Show'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.go('objects', '', { ...Object.fromEntries(Object.entries(inputs).map(([n, i]) => [n, i.value.trim()])), includeVersions: versions.checked ? 'true' : null });
  });
  view.append(form);
  if (!p('bucket')) {
    view.append(notice('Name a bucket to list its objects.'));
    return;
  }
  const params = { bucket: p('bucket'), limit: 200 };
  for (const name of ['prefix', 'at', 'customerId']) if (p(name)) params[name] = p(name);
  if (p('includeVersions') === 'true') params.includeVersions = 'true';
  const loaded = [];
  const holder = slot(view, 'objects');
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  view.append(h('div', { class: 'row-actions' }, more));
  let cursor = null;
  const columns = [
    { label: 'key', value: (o) => o.key },
    { label: 'versionId', value: (o) => o.versionId ?? '' },
    { label: 'kind', value: (o) => (o.deleteMarker ? 'delete marker' : 'version') },
    { label: 'size', value: (o) => o.size ?? '', show: (o) => (o.deleteMarker ? '' : o.size === null || o.size === undefined ? 'unknown' : bytes(o.size)), num: true },
    { label: 'customerId', value: (o) => o.created?.customerId ?? '' },
    { label: 'created', value: (o) => o.created?.at ?? '', show: (o) => when(o.created, range.timeZone) },
    { label: 'created by', value: (o) => o.created?.eventId ?? '' },
    { label: 'ended', value: (o) => o.ended?.at ?? '', show: (o) => when(o.ended, range.timeZone) },
    { label: 'ended by', value: (o) => o.ended?.eventId ?? '' },
  ];
  const load = async () => {
    const page = await get('/v1/objects', { ...params, ...(cursor ? { cursor } : {}) }, ctx.signal);
    loaded.push(...page.objects);
    cursor = page.nextCursor;
    more.hidden = cursor === null;
    return table(`${loaded.length} objects in ${params.bucket}${cursor ? ' (more to load)' : ''}`, 'objects', columns, loaded, { empty: 'No objects match.' });
  };
  more.addEventListener('click', () => fill(holder, ctx, load));
  await fill(holder, ctx, load);
}

async function quarantine(ctx) {
  const { state, range, view } = ctx;
  if (state.arg) return quarantineEntry(ctx);
  const replayed = state.params.get('includeReplayed') === 'true';
  const box = h('input', { type: 'checkbox', name: 'includeReplayed', checked: replayed });
  box.addEventListener('change', () => ctx.go('quarantine', '', { includeReplayed: box.checked ? 'true' : null }));
  view.append(h('h1', {}, 'Quarantine'), h('p', { class: 'muted' }, 'Inputs this tenant sent that were refused, newest first (all times, not only the range).'), h('div', { class: 'filters' }, h('label', { class: 'inline' }, box, 'include replayed entries')));
  const loaded = [];
  const holder = slot(view, 'quarantine');
  const more = h('button', { type: 'button', hidden: true }, 'Load more');
  view.append(h('div', { class: 'row-actions' }, more));
  let cursor = null;
  const keep = new URLSearchParams(state.params);
  const columns = [
    { label: 'id', value: (q) => q.id, show: (q) => h('a', { href: `#/quarantine/${q.id}${keep.size ? `?${keep}` : ''}` }, String(q.id)) },
    { label: 'received', value: (q) => q.receivedAt, show: (q) => instant(q.receivedAt, range.timeZone) },
    { label: 'code', value: (q) => q.code },
    { label: 'source', value: (q) => q.source },
    { label: 'index', value: (q) => q.index ?? '' },
    { label: 'first error', value: (q) => firstError(q) },
    { label: 'size', value: (q) => q.bodyBytes, show: (q) => bytes(q.bodyBytes) + (q.truncated ? ' (cut)' : ''), num: true },
    { label: 'replayed', value: (q) => q.replayedAt ?? '', show: (q) => (q.replayedAt ? instant(q.replayedAt, range.timeZone) : '') },
  ];
  const load = async () => {
    const page = await get('/v1/quarantine', { limit: 100, ...(replayed ? { includeReplayed: 'true' } : {}), ...(cursor ? { cursor } : {}) }, ctx.signal);
    loaded.push(...page.entries);
    cursor = page.nextCursor;
    more.hidden = cursor === null;
    return table(`${loaded.length} entries${cursor ? ' (more to load)' : ''}`, 'quarantine', columns, loaded, { empty: 'The quarantine is empty.' });
  };
  more.addEventListener('click', () => fill(holder, ctx, load));
  await fill(holder, ctx, load);
}

function firstError(q) {
  const e = q.errors[0];
  return e ? `${e.path || '(body)'}: ${e.message}` : '';
}

async function quarantineEntry(ctx) {
  const { state, range, view } = ctx;
  const q = await get(`/v1/quarantine/${encodeURIComponent(state.arg)}`, {}, ctx.signal);
  const keep = state.params.toString();
  view.append(
    h('p', {}, h('a', { href: `#/quarantine${keep ? `?${keep}` : ''}` }, '← Quarantine')),
    h('h1', {}, `Quarantine entry ${q.id}`),
    cards([
      ['Code', q.code, 'code'],
      ['Source', q.source + (q.index === null ? '' : ` [${q.index}]`), 'source'],
      ['Received', instant(q.receivedAt, range.timeZone), 'received'],
      ['Size kept', bytes(q.bodyBytes) + (q.truncated ? ' (cut)' : ''), 'size'],
    ], true),
    table('Errors', `quarantine-${q.id}-errors`, ['path', 'message', 'expected', 'received'].map((c) => ({ label: c, value: (e) => e[c] ?? '' })), q.errors),
    h('h2', {}, `Body (${q.body.encoding === 'utf8' ? 'as received' : 'not UTF-8, shown as base64'})`),
    // textContent only: the body came from a client and is never interpreted as markup.
    h('pre', { class: 'body', 'data-body': q.body.encoding, tabindex: '0' }, prettyBody(q.body)),
  );
}

function prettyBody(body) {
  if (body.encoding !== 'utf8') return body.text;
  try {
    return JSON.stringify(JSON.parse(body.text), null, 2);
  } catch {
    return body.text;
  }
}

async function receipts(ctx) {
  const { state, view } = ctx;
  // Receipts are kept per UTC day: the range's dates as UTC days.
  const from = `${state.from}T00:00:00Z`;
  const to = new Date(Date.parse(`${state.to}T00:00:00Z`) + 86_400_000).toISOString().replace('.000Z', 'Z');
  view.append(h('h1', {}, 'Receipts and reconciliation'), h('p', { class: 'muted' }, `UTC days ${state.from} to ${state.to}: what was received, stored, duplicate and rejected, checked against the events and every rollup.`));
  const result = await get('/v1/usage/reconcile', { from, to }, ctx.signal);
  const bad = new Set(result.differences.map((d) => d.day));
  view.append(
    result.differences.length === 0 ? notice('Every day reconciles: receipts, events and rollups agree.') : notice(`${result.differences.length} differences found.`, 'error'),
    table('Per day', 'receipts', [
      { label: 'day', value: (d) => d.day },
      ...['received', 'stored', 'duplicates', 'rejected', 'storedByArrival', 'requests'].map((f) => ({ label: f, value: (d) => d[f], show: (d) => count(d[f]), num: true })),
      { label: 'rollups', value: (d) => JSON.stringify(d.rollupRequests ?? {}), show: (d) => Object.entries(d.rollupRequests ?? {}).map(([k, v]) => `${k} ${count(v)}`).join(', ') },
      { label: 'status', value: (d) => (bad.has(d.day) ? 'differs' : 'ok'), show: (d) => h('span', { class: bad.has(d.day) ? 'bad' : 'ok' }, bad.has(d.day) ? 'differs' : 'ok') },
    ], result.days),
    ...(result.differences.length > 0 ? [table('Differences', 'differences', Object.keys(result.differences[0]).map((k) => ({ label: k, value: (d) => (typeof d[k] === 'object' ? JSON.stringify(d[k]) : d[k]) })), result.differences)] : []),
  );
}

export const VIEWS = { overview, customer, events, objects, quarantine, receipts };
