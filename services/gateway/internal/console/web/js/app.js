// The console's entry point: sign-in, the hash router over pages/index.js,
// the navigation and the notice area. Pages get a context: the main
// element, their params and query, an AbortSignal that ends their streams
// when the user leaves, and helpers to navigate and report errors.
import { h, add, alert } from './dom.js';
import { call, session, whenUnauthorized, ApiError } from './api.js';
import { pages } from './pages/index.js';
import { IDENTITY_PATH } from './paths.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const notice = document.getElementById('notice');
let leaving = new AbortController();

// showError puts a refused or failed call in the notice area, plainly:
// the HTTP status and the server's own message.
export function showError(err) {
  const title = err instanceof ApiError ? err.title : 'Error';
  notice.replaceChildren(alert('error', title, err.message));
  notice.scrollIntoView({ block: 'nearest' });
}

function clearNotice() { notice.replaceChildren(); }

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function parse() {
  const raw = location.hash.replace(/^#/, '') || '/services';
  const [path, query] = raw.split('?');
  return { path, query: new URLSearchParams(query || '') };
}

function renderChrome(current) {
  const id = session.identity();
  nav.replaceChildren(...pages.filter((p) => p.nav && (!p.needs || session.can(p.needs))).map((p) => h('a', {
    href: p.href, 'aria-current': current && (current.href === p.href || current.navOf === p.href) ? 'page' : null,
  }, p.nav)));
  who.replaceChildren();
  if (id) {
    add(who, [h('span', { id: 'identity' }, `${id.principal} (${id.role})`),
      h('button', { class: 'secondary', id: 'sign-out', onclick: signOut }, 'Sign out')]);
  }
}

function signOut() {
  // The page stops first (its polls and watch): the hashchange that would
  // stop it comes later, and a poll in between would go out without a
  // token (a 401 in the browser's console).
  leaving.abort();
  session.clear();
  clearNotice();
  navigate('#/signin');
}

async function route() {
  leaving.abort();
  leaving = new AbortController();
  const { path, query } = parse();
  if (!session.token() && path !== '/signin') {
    navigate('#/signin');
    return;
  }
  if (path === '/signin') {
    renderChrome(null);
    main.replaceChildren(signInForm());
    document.getElementById('token').focus();
    return;
  }
  const page = pages.find((p) => p.pattern.test(path));
  renderChrome(page);
  clearNotice();
  main.replaceChildren();
  if (!page) {
    main.append(h('h1', { tabindex: '-1' }, 'Not found'), h('p', {}, `The console has no page ${path}. `, h('a', { href: '#/services' }, 'Services')));
    return;
  }
  const params = page.pattern.exec(path).slice(1).map(decodeURIComponent);
  const ctx = { main, params, query, signal: leaving.signal, navigate, showError, clearError: clearNotice, session };
  try {
    const render = await page.load();
    if (!ctx.signal.aborted) await render(ctx);
  } catch (err) {
    if (!ctx.signal.aborted) showError(err);
  }
  const heading = main.querySelector('h1');
  if (heading && !main.contains(document.activeElement)) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
}

function signInForm() {
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', required: true, 'aria-describedby': 'token-help' });
  const form = h('form', { class: 'panel signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('div', { class: 'field' }, h('label', { for: 'token' }, 'Bearer token'), input),
    h('p', { id: 'token-help', class: 'muted' },
      'The same token as for REST and vcfctl. It is kept in this tab only and forgotten when the tab closes.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'sign-in' }, 'Sign in')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    try {
      const identity = await call('GET', IDENTITY_PATH, undefined, token);
      session.save(token, identity);
      clearNotice();
      navigate('#/services');
    } catch (err) {
      showError(err);
    }
  });
  return form;
}

whenUnauthorized((err) => {
  session.clear();
  navigate('#/signin');
  showError(err);
});
window.addEventListener('hashchange', route);
// A page left for another (or kept in the back/forward cache) closes its
// streams: a browser holds only six HTTP/1.1 connections per host, and a
// frozen page's watch would keep one. Shown again, the page routes anew.
window.addEventListener('pagehide', () => leaving.abort());
window.addEventListener('pageshow', (ev) => { if (ev.persisted) route(); });
route();
