// The dashboard's shell: sign-in, the URL as the state (#/view/arg?params, shareable), the range
// form, and dispatch to the views.
import { ApiError, clearKey, get, getKey, serverFeatures, setKey, signInMessage } from './api.js';
import { failure, h, notice } from './dom.js';
import { addDays, dateIn, zoneMidnight } from './format.js';
import { VIEWS } from './views.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const rangeForm = document.getElementById('range');
const signOut = document.getElementById('signout');
const DEFAULT_DAYS = 30;
/** The render on screen's: a new render aborts it, and so the fetches of the view left behind. */
let current;

function knownZone(tz) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The state the URL holds. */
export function readState() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = hash.split('?');
  const [view = 'overview', ...rest] = path.split('/');
  const params = new URLSearchParams(query);
  const tz = params.get('tz') || Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  // A zone this browser does not know is kept (the view says so), with default dates in UTC.
  const to = params.get('to') || dateIn(knownZone(tz) ? tz : 'UTC');
  const from = params.get('from') || addDays(to, 1 - DEFAULT_DAYS);
  const g = params.get('g') || 'day';
  return { view: VIEWS[view] ? view : 'overview', arg: rest.map(decodeURIComponent).join('/'), params, from, to, tz, g };
}

/** Navigates to a state: the view, its argument and the parameters changed (null removes one). */
export function go(view, arg, changes = {}) {
  const params = new URLSearchParams(readState().params);
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === '') params.delete(name);
    else params.set(name, value);
  }
  const path = arg ? `${view}/${encodeURIComponent(arg)}` : view;
  const query = params.toString();
  location.hash = `#/${path}${query ? `?${query}` : ''}`;
}

function fillRangeForm(state) {
  rangeForm.from.value = state.from;
  rangeForm.to.value = state.to;
  rangeForm.tz.value = state.tz;
  rangeForm.g.value = state.g;
  rangeForm.preset.value = '';
}

rangeForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const state = readState();
  go(state.view, state.arg, { from: rangeForm.from.value, to: rangeForm.to.value, tz: rangeForm.tz.value.trim(), g: rangeForm.g.value });
});
rangeForm.preset.addEventListener('change', () => {
  const days = Number(rangeForm.preset.value);
  if (!days) return;
  const tz = knownZone(rangeForm.tz.value.trim()) ? rangeForm.tz.value.trim() : 'UTC';
  rangeForm.to.value = dateIn(tz);
  rangeForm.from.value = addDays(rangeForm.to.value, 1 - days);
});
document.getElementById('zones').append(...(Intl.supportedValuesOf?.('timeZone') ?? ['UTC']).map((z) => h('option', { value: z })));
signOut.addEventListener('click', () => {
  clearKey();
  render();
});

function showSignIn(message) {
  nav.hidden = true;
  rangeForm.hidden = true;
  signOut.hidden = true;
  const input = h('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'signin-help' });
  const status = h('div', { id: 'signin-status', 'aria-live': 'polite' }, message ? notice(message, 'error') : null);
  const form = h(
    'form',
    { class: 'signin', 'aria-label': 'Sign in' },
    h('h1', {}, 'Sign in'),
    h('label', { for: 'key' }, 'API key with the read (or all) scope'),
    input,
    h('p', { id: 'signin-help', class: 'muted' }, 'Kept in this tab only (sessionStorage) and sent as X-API-Key. Create one with: bucketmeter keys create --tenant NAME --scope read'),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (key === '') {
      status.replaceChildren(notice(signInMessage({ code: 'BM_ERR_AUTH_MISSING_KEY' }), 'error'));
      return;
    }
    setKey(key);
    try {
      await get('/v1/quarantine', { limit: 1 });
    } catch (error) {
      clearKey();
      status.replaceChildren(notice(error instanceof ApiError ? signInMessage(error) : `Sign-in failed: ${error.message}`, 'error'));
      return;
    }
    render();
  });
  main.replaceChildren(form);
  input.focus();
}

async function render() {
  current?.abort();
  current = new AbortController();
  const { signal } = current;
  if (!getKey()) {
    showSignIn();
    return;
  }
  const state = readState();
  nav.hidden = false;
  signOut.hidden = false;
  rangeForm.hidden = false;
  fillRangeForm(state);
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.view === state.view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
    // Links keep the range and zone, so that moving between views keeps what is looked at.
    const keep = new URLSearchParams();
    for (const name of ['from', 'to', 'tz', 'g']) if (state.params.has(name)) keep.set(name, state.params.get(name));
    a.href = `#/${a.dataset.view}${keep.size ? `?${keep}` : ''}`;
  }
  const view = h('div', { class: 'view', 'data-view': state.view });
  main.replaceChildren(view);
  main.dataset.state = 'loading';
  try {
    let range;
    try {
      range = { from: zoneMidnight(state.from, state.tz), to: zoneMidnight(addDays(state.to, 1), state.tz), timeZone: state.tz, granularity: state.g };
    } catch {
      throw new Error(`the range ${state.from} to ${state.to} in ${state.tz} is not valid (dates as YYYY-MM-DD, a time zone such as Europe/Berlin)`);
    }
    const features = await serverFeatures();
    await VIEWS[state.view]({ state, range, features, view, go, signal, retry: render });
  } catch (error) {
    // Left for another render: its aborted fetches are no error, and nothing of it is drawn.
    if (signal.aborted) return;
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      clearKey();
      showSignIn(signInMessage(error));
      return;
    }
    view.append(failure(error, render));
  }
  if (!signal.aborted) {
    main.dataset.state = 'ready';
    // Which state is on screen (tests wait for it after changing the URL).
    main.dataset.rendered = location.hash;
  }
}

window.addEventListener('hashchange', render);
render();
