// Building the page: elements with text only (never HTML from data), tables with a CSV download,
// notices.
import { ApiError, failureMessage, Unreachable } from './api.js';
import { csv } from './format.js';

/** An element; `attrs` with on* functions as listeners; children are nodes or text. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function notice(text, kind = '') {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/**
 * A failed read's notice; with a Retry button (`retry` called) when asking again may succeed: no
 * answer came, or a 429 or 503, each of which says when to ask again (README "Errors": a read out of
 * time, months not priced yet, the cost thread out of memory, the database out of reach); a
 * refusal (4xx, a cost too large to price among them) would be the same again.
 */
export function failure(error, retry) {
  const shown = notice(failureMessage(error), 'error');
  const again = error instanceof Unreachable || (error instanceof ApiError && (error.status === 429 || error.status === 503));
  if (again) shown.append(' ', h('button', { type: 'button', class: 'retry', onclick: retry }, 'Retry'));
  return shown;
}

export function unavailable(what) {
  return h('p', { class: 'notice unavailable', 'data-unavailable': what }, `${what}: not available on this server (it does not offer this endpoint yet).`);
}

/**
 * A table of `rows` with `columns` ({label, value(row) → raw value for CSV, show(row) → text or node,
 * num}), under a heading with a CSV download of exactly the raw values.
 */
export function table(title, name, columns, rows, options = {}) {
  const head = h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : undefined }, c.label)));
  const body = rows.map((row) => h('tr', {}, columns.map((c) => h('td', { class: c.num ? 'num' : undefined }, (c.show ?? c.value)(row)))));
  const download = h('button', { type: 'button', class: 'csv', 'data-csv': name }, 'Download CSV');
  download.addEventListener('click', () => {
    const text = csv(
      columns.map((c) => c.label),
      rows.map((row) => columns.map((c) => c.value(row))),
    );
    const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
    const a = h('a', { href: url, download: `${name}.csv` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  });
  const caption = options.caption ? h('p', { class: 'muted' }, options.caption) : null;
  return h(
    'section',
    { class: 'table-section', 'data-table': name },
    h('div', { class: 'table-head' }, h('h2', {}, title), download),
    caption,
    rows.length === 0
      ? h('p', { class: 'notice empty' }, options.empty ?? 'Nothing in this range.')
      : h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': title }, h('table', {}, h('thead', {}, head), h('tbody', {}, body))),
  );
}

/** [label, value, name] each; `text`: values are words, not figures (smaller type). */
export function cards(items, text = false) {
  return h(
    'div',
    { class: text ? 'cards text' : 'cards' },
    items.map(([label, value, name]) => h('div', { class: 'card', 'data-card': name }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value))),
  );
}
