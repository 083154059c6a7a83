// Services: the list with the REST list's query (FIQL filter, sort,
// paging), status and lifecycle badges, kept live by the watch streams of
// the services on the page.
import { h, badge, table } from '../dom.js';
import { call, stream } from '../api.js';
import { WATCH_PATH } from '../paths.js';
import { keepFollowing } from '../live.js';

const SORTABLE = ['name', 'version', 'vendor', 'status', 'lifecycleState', 'phase', 'createdAt', 'updatedAt'];
const SIZES = ['10', '25', '50', '100', '128'];

function listQuery(q) {
  const page = Math.max(1, parseInt(q.get('page') || '1', 10) || 1);
  const pageSize = SIZES.includes(q.get('pageSize')) ? q.get('pageSize') : '25';
  return { filter: q.get('filter') || '', sort: q.get('sort') || '', order: q.get('order') === 'desc' ? 'desc' : 'asc', page, pageSize };
}

function hashOf(lq) {
  const p = new URLSearchParams();
  if (lq.filter) p.set('filter', lq.filter);
  if (lq.sort) { p.set('sort', lq.sort); p.set('order', lq.order); }
  p.set('page', String(lq.page));
  p.set('pageSize', lq.pageSize);
  return `#/services?${p}`;
}

// restPath is the REST list call the page makes: the same query a script
// would send.
function restPath(lq) {
  const p = new URLSearchParams({ page: String(lq.page), pageSize: lq.pageSize });
  if (lq.filter) p.set('filter', lq.filter);
  if (lq.sort) p.set(lq.order === 'desc' ? 'sortDesc' : 'sortAsc', lq.sort);
  return `/v2/vcf-services?${p}`;
}

function queryForm(lq, navigate) {
  const filter = h('input', { type: 'text', id: 'filter', name: 'filter', value: lq.filter, placeholder: 'name==*demo*;status==Healthy', spellcheck: 'false' });
  const sort = h('select', { id: 'sort', name: 'sort' }, h('option', { value: '' }, 'creation (oldest first)'),
    SORTABLE.map((f) => h('option', { value: f, selected: f === lq.sort }, f)));
  const order = h('select', { id: 'order', name: 'order' },
    h('option', { value: 'asc', selected: lq.order === 'asc' }, 'ascending'),
    h('option', { value: 'desc', selected: lq.order === 'desc' }, 'descending'));
  const size = h('select', { id: 'page-size', name: 'pageSize' }, SIZES.map((s) => h('option', { value: s, selected: s === lq.pageSize }, s)));
  const form = h('form', { class: 'bar', role: 'search', 'aria-label': 'Filter services' },
    h('div', { class: 'field grow' }, h('label', { for: 'filter' }, 'FIQL filter'), filter),
    h('div', { class: 'field' }, h('label', { for: 'sort' }, 'Sort by'), sort),
    h('div', { class: 'field' }, h('label', { for: 'order' }, 'Order'), order),
    h('div', { class: 'field' }, h('label', { for: 'page-size' }, 'Page size'), size),
    h('button', { type: 'submit', id: 'apply' }, 'Apply'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate(hashOf({ filter: filter.value.trim(), sort: sort.value, order: order.value, page: 1, pageSize: size.value }));
  });
  return form;
}

function pager(lq, result, navigate) {
  const pages = Math.max(1, result.pageCount || 1);
  const go = (p) => navigate(hashOf({ ...lq, page: Math.min(Math.max(1, p), pages) }));
  const jump = h('input', { type: 'number', class: 'num', id: 'goto-page', min: '1', max: String(pages), value: String(lq.page) });
  const form = h('form', { class: 'pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', class: 'secondary', id: 'first-page', disabled: lq.page <= 1, onclick: () => go(1) }, 'First'),
    h('button', { type: 'button', class: 'secondary', id: 'prev-page', disabled: lq.page <= 1, onclick: () => go(lq.page - 1) }, 'Previous'),
    h('span', { id: 'page-info', 'aria-live': 'polite' }, `Page ${lq.page} of ${pages} · ${result.resultTotal} services`),
    h('button', { type: 'button', class: 'secondary', id: 'next-page', disabled: lq.page >= pages, onclick: () => go(lq.page + 1) }, 'Next'),
    h('button', { type: 'button', class: 'secondary', id: 'last-page', disabled: lq.page >= pages, onclick: () => go(pages) }, 'Last'),
    h('label', { for: 'goto-page' }, 'Go to page'), jump,
    h('button', { type: 'submit', class: 'secondary', id: 'goto' }, 'Go'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(parseInt(jump.value, 10) || 1);
  });
  return form;
}

function row(s) {
  const link = h('a', { href: `#/services/${encodeURIComponent(s.id)}` }, s.name || s.id);
  return h('tr', { 'data-id': s.id },
    h('td', {}, link),
    h('td', { 'data-col': 'version' }, s.version),
    h('td', { class: 'wide' }, s.vendor),
    h('td', { 'data-col': 'status' }, badge(s.status)),
    h('td', { 'data-col': 'lifecycleState' }, badge(s.lifecycleState)),
    h('td', { 'data-col': 'phase', class: 'wide' }, s.phase || ''),
    h('td', { class: 'wide' }, s.availableUpgrade ? badge('Upgrade ' + s.availableUpgrade) : ''));
}

// follow keeps the rows live: one fan-in of the page's watch streams,
// reopened when the gateway closes it.
function follow(tbody, ids, signal, refresh) {
  if (ids.length === 0) return;
  const q = new URLSearchParams();
  ids.forEach((id) => q.append('id', id));
  const rows = new Map([...tbody.querySelectorAll('tr[data-id]')].map((tr) => [tr.dataset.id, tr]));
  keepFollowing(() => stream(`${WATCH_PATH}?${q}`, (line) => {
    const ev = line.result;
    if (!ev) { refresh(); return; } // a stream failed (the service went away): ask the page again
    const tr = rows.get(ev.id);
    if (!tr) return;
    if (ev.deleted) { tr.classList.add('gone'); return; }
    tr.querySelector('[data-col=status]').replaceChildren(badge(ev.status));
    tr.querySelector('[data-col=lifecycleState]').replaceChildren(badge(ev.lifecycleState));
    tr.querySelector('[data-col=phase]').replaceChildren(ev.phase || '');
    tr.querySelector('[data-col=version]').replaceChildren(ev.version || '');
  }, signal).then(() => [...rows.values()].every((tr) => tr.classList.contains('gone'))), signal)
    .catch(() => { /* refused: the rows stay as listed; Refresh asks again */ });
}

export async function servicesPage(ctx) {
  const lq = listQuery(ctx.query);
  const status = h('p', { class: 'muted', id: 'list-status' }, 'Loading…');
  const refresh = () => ctx.navigate(hashOf(lq));
  ctx.main.append(h('h1', {}, 'Services'), queryForm(lq, ctx.navigate), status);
  const result = await call('GET', restPath(lq));
  if (ctx.signal.aborted) return;
  const values = result.values || [];
  const tbody = h('tbody', {}, values.map(row));
  const list = table(`${result.resultTotal} services${lq.filter ? ` matching ${lq.filter}` : ''}`,
    ['Name', 'Version', ['Vendor', 'wide'], 'Status', 'Lifecycle', ['Phase', 'wide'], ['Upgrade', 'wide']], [], { id: 'services' });
  list.querySelector('tbody').replaceWith(tbody);
  // The browser reports when the first page is painted (Element Timing):
  // what BenchmarkConsoleList10k reads.
  list.querySelector('caption').setAttribute('elementtiming', 'services-list');
  status.replaceWith(h('div', { class: 'bar' }, h('button', { type: 'button', class: 'secondary', id: 'refresh', onclick: refresh }, 'Refresh'),
    h('span', { class: 'muted' }, 'Rows follow each service live.')));
  ctx.main.append(list, values.length === 0 ? h('p', { id: 'empty' }, 'No service matches.') : null, pager(lq, result, ctx.navigate));
  follow(tbody, values.map((s) => s.id), ctx.signal, refresh);
}
