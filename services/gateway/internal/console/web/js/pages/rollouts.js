// Rollouts: every service with a fleet rollout (running or its last one),
// filtered by the rollout's state with the REST list's own FIQL
// (rollout.state), and the catalog's quarantined versions.
import { h, badge, table } from '../dom.js';
import { call } from '../api.js';
import { quarantineSection } from '../quarantine.js';

const STATES = ['Running', 'WaitingApproval', 'Paused', 'RollingBack', 'RollbackRefused', 'Succeeded', 'RolledBack'];
const PAGE = 25;

function row(s) {
  const r = s.rollout || {};
  const href = `#/services/${encodeURIComponent(s.id)}/rollout`;
  return h('tr', { 'data-id': s.id, 'data-state': r.state },
    h('td', {}, h('a', { href }, s.name)), h('td', { class: 'mono' }, `${s.version} → ${r.toVersion}`), h('td', {}, badge(r.state)),
    h('td', {}, `${r.wave || 0} of ${r.waves || 0}`),
    h('td', {}, h('meter', { min: '0', max: String(r.total || 1), value: String(r.done || 0), 'aria-label': `${s.name}: ${r.done || 0} of ${r.total || 0} targets done` }),
      ` ${r.done || 0} done, ${r.failed || 0} failed, ${r.waitingForWindow || 0} waiting for a window, of ${r.total || 0}`));
}

export async function rolloutsPage(ctx) {
  const state = ctx.query.get('state') || '';
  const page = Math.max(1, parseInt(ctx.query.get('page') || '1', 10) || 1);
  const filter = state ? `rollout.state==${state}` : 'rollout.state==*';
  const list = await call('GET', `/v2/vcf-services?${new URLSearchParams({ page: String(page), pageSize: String(PAGE), sortDesc: 'updatedAt', filter })}`);
  if (ctx.signal.aborted) return;
  const select = h('select', { id: 'rollout-state-filter' }, h('option', { value: '' }, 'Every state'),
    STATES.map((s) => h('option', { value: s, selected: s === state }, s)));
  const go = (p) => ctx.navigate(`#/rollouts?${new URLSearchParams({ state: select.value, page: String(p) })}`);
  const form = h('form', { class: 'bar', 'aria-label': 'Filter the rollouts' },
    h('div', { class: 'field' }, h('label', { for: 'rollout-state-filter' }, 'Rollout state'), select),
    h('button', { type: 'submit', id: 'rollouts-apply' }, 'Apply'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); go(1); });
  const pages = Math.max(1, list.pageCount || 1);
  ctx.main.append(h('h1', {}, 'Rollouts'),
    h('p', { class: 'muted' }, 'Fleet upgrades in waves: each service\'s running or last rollout. Start one from a service\'s upgrade page or with vcfctl service upgrade --rollout.'),
    form,
    (list.values || []).length === 0 ? h('p', { id: 'no-rollouts' }, state ? `No rollout is ${state}.` : 'No service has rolled out in waves yet.')
      : table(`Page ${page} of ${pages} · ${list.resultTotal} services`, ['Service', 'Versions', 'State', 'Wave', 'Targets'], (list.values || []).map(row), { id: 'rollouts' }),
    pages > 1 ? h('div', { class: 'pager' },
      h('button', { type: 'button', class: 'secondary', id: 'rollouts-prev', disabled: page <= 1, onclick: () => go(page - 1) }, 'Previous'),
      h('button', { type: 'button', class: 'secondary', id: 'rollouts-next', disabled: page >= pages, onclick: () => go(page + 1) }, 'Next')) : null);
  const q = await quarantineSection(ctx, '', () => ctx.navigate(location.hash));
  if (!ctx.signal.aborted) ctx.main.append(q);
}
