// The upgrade page's fleet rollout: which strategy the upgrade rolls out
// with (the service's or the provider's default, a stored one by name, or
// all at once), and the fleet plan's line per Supervisor: its wave, its
// maintenance window, its checks and resources, and what blocks it.
import { h, badge, table, when } from './dom.js';

// strategyPicker is the select of strategies; request() is the plan's and
// the upgrade's rollout (undefined: the default applies).
export function strategyPicker(svc, strategies) {
  const list = (strategies && strategies.strategies) || [];
  const def = svc.rolloutStrategy || (strategies && strategies.defaultRollout) || '';
  const select = h('select', { id: 'rollout-strategy' },
    h('option', { value: '' }, def ? `Default: ${def}` : 'Default: all at once (no strategy set)'),
    list.map((s) => h('option', { value: s.name }, `${s.name} (${(s.waves || []).length} waves)`)),
    h('option', { value: 'none' }, 'All at once (no waves)'));
  return {
    el: h('div', { class: 'field' }, h('label', { for: 'rollout-strategy' }, 'Rollout strategy'), select),
    request: () => (select.value === '' ? undefined : select.value === 'none' ? { none: true } : { name: select.value }),
  };
}

function severities(t) {
  const n = {};
  for (const r of [...(t.compatibility || []), ...(t.hook || [])]) n[r.severity] = (n[r.severity] || 0) + 1;
  return Object.entries(n).map(([s, c]) => `${c} ${s}`).join(', ');
}

function actions(t) {
  const n = {};
  for (const r of t.resources || []) n[r.action] = (n[r.action] || 0) + 1;
  return Object.entries(n).map(([a, c]) => `${c} ${a}`).join(', ');
}

function lines(targets) {
  const sorted = targets.slice().sort((a, b) => (a.allowed === b.allowed ? a.wave - b.wave : a.allowed ? 1 : -1));
  return table(null, ['Supervisor', 'Region', 'Wave', 'Verdict', 'Window opens', 'Checks', 'Resources', 'Blocked by'],
    sorted.map((t) => h('tr', { 'data-supervisor': t.supervisor, 'data-allowed': String(!!t.allowed) },
      h('td', {}, t.supervisor), h('td', {}, t.region), h('td', {}, `${t.wave} ${t.waveName || ''}`),
      h('td', {}, badge(t.allowed ? 'Passed' : 'Blocked')), h('td', {}, t.windowOpens ? when(t.windowOpens) : 'open'),
      h('td', {}, severities(t)), h('td', {}, actions(t)), h('td', {}, (t.blockingReasons || []).join('; ')))),
    { id: 'plan-target-lines' });
}

// fleetPlanView shows the plan's waves and, on request, every line (a
// thousand rows are built only when asked for).
export function fleetPlanView(plan) {
  const targets = plan.targets || [];
  const waves = new Map();
  for (const t of targets) {
    const w = waves.get(t.wave) || { name: t.waveName, n: 0, blocked: 0, closed: 0 };
    w.n++;
    if (!t.allowed) w.blocked++;
    if (t.windowOpens) w.closed++;
    waves.set(t.wave, w);
  }
  const all = h('details', { id: 'plan-targets' }, h('summary', {}, `Every Supervisor's line (${targets.length})`));
  all.addEventListener('toggle', () => { if (all.open && all.children.length === 1) all.append(lines(targets)); });
  return h('section', { id: 'fleet-plan', 'aria-labelledby': 'fleet-plan-h' },
    h('h3', { id: 'fleet-plan-h' }, `Rollout: ${plan.rolloutStrategy || 'inline strategy'}, ${targets.length} Supervisors in ${waves.size} waves`),
    table(null, ['Wave', 'Name', 'Supervisors', 'Blocked', 'Window closed now'], [...waves.entries()].sort(([a], [b]) => a - b).map(([i, w]) => h('tr', { 'data-wave': String(i) },
      h('td', {}, String(i)), h('td', {}, w.name), h('td', {}, String(w.n)), h('td', {}, w.blocked ? badge(`${w.blocked} blocked`) : '0'), h('td', {}, String(w.closed)))),
    { id: 'plan-waves' }),
    all);
}
