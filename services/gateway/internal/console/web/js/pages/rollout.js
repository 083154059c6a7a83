// One service's fleet rollout: its state and reason, the waves, a grid of
// every target coloured and marked by state (readable at a thousand
// Supervisors) with a legend, a filter and the focused target's details,
// the actions the rollout and the role allow, and the package's
// quarantined versions. Live: the service's watch stream (and, while the
// rollout runs, a slow poll) refreshes it.
import { h, badge, severity, table, facts, when, alert, confirmDialog } from '../dom.js';
import { call, servicePath } from '../api.js';
import { watchService } from '../live.js';
import { targetGrid, legend, targetStates } from '../grid.js';
import { quarantineSection } from '../quarantine.js';

const ENDED = ['Succeeded', 'RolledBack'];

function targetDetail(t) {
  return h('div', { class: 'panel', id: 'target-detail-body' },
    h('h3', {}, `Supervisor ${t.supervisor}`),
    facts([['Region', t.region], ['Wave', String(t.wave)], ['State', badge(t.state)], ['Version', h('span', { class: 'mono' }, t.version)],
      ['Message', t.message], ['Moved', when(t.movedAt)], ['Healthy', when(t.healthyAt)], ['Window opens', when(t.windowOpens)]]),
    (t.notes || []).length ? h('ul', {}, t.notes.map((n) => h('li', {}, severity(n.severity), ' ', n.message))) : null);
}

function wavesTable(r) {
  return table(null, ['#', 'Wave', 'State', 'Targets', ['Approved by', 'wide'], ['Started', 'wide'], ['Done', 'wide']],
    (r.waves || []).map((w, i) => h('tr', { 'data-wave': String(i + 1), 'data-state': w.state },
      h('td', {}, String(i + 1)), h('td', {}, w.name), h('td', {}, badge(w.state)), h('td', {}, String(w.targets || 0)),
      h('td', { class: 'wide' }, w.approvedBy), h('td', { class: 'wide' }, when(w.startedAt)), h('td', { class: 'wide' }, when(w.doneAt)))),
    { id: 'waves' });
}

// actions are the buttons this rollout's state and the caller's role
// allow: approve and abort are an administrator's, pause and resume an
// operator's too.
function actions(ctx, id, r, refresh) {
  const admin = ctx.session.can('admin');
  const write = ctx.session.can('services.write');
  const live = !ENDED.includes(r.state) && r.state !== 'RollingBack';
  const post = (what, body) => async () => {
    try {
      await call('POST', servicePath(id, `/rollout/${what}`), body ? body() : {});
      refresh();
    } catch (err) {
      ctx.showError(err);
    }
  };
  const withDialog = (title, text, label, danger, field, run) => async () => {
    const input = field ? h('input', { type: 'text', id: field.id, spellcheck: 'false' }) : null;
    const body = [h('p', {}, text), field ? h('div', { class: 'field' }, h('label', { for: field.id }, field.label), input) : null];
    if (await confirmDialog(title, body, label, danger)) run(input ? input.value.trim() : '')();
  };
  const buttons = [];
  if (admin && r.state === 'WaitingApproval') {
    buttons.push(h('button', { type: 'button', id: 'rollout-approve', onclick: withDialog(`Approve wave ${r.wave}?`,
      `Wave ${r.wave} (${(r.waves[r.wave - 1] || {}).name}) starts moving its targets to ${r.toVersion}.`, 'Approve', false,
      { id: 'override-reason', label: 'Override its gates\' ERRORs, because (optional)' }, (reason) => post('approve', () => (reason ? { overrideReason: reason } : {}))) }, `Approve wave ${r.wave}`));
  }
  if (write && live && !r.paused && r.state !== 'Paused') {
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'rollout-pause', onclick: post('pause') }, 'Pause'));
  }
  if (write && (r.paused || r.state === 'Paused')) {
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'rollout-resume', onclick: post('resume') }, 'Resume'));
  }
  if (admin && live) {
    buttons.push(h('button', { type: 'button', class: 'danger', id: 'rollout-abort', onclick: withDialog('Abort the rollout?',
      `Every target already on ${r.toVersion} is rolled back to ${r.fromVersion}, wave by wave in reverse order, and ${r.toVersion} is quarantined.`, 'Abort', true,
      { id: 'abort-reason', label: 'Reason' }, (reason) => post('abort', () => ({ reason }))) }, 'Abort…'));
  }
  return buttons.length ? h('div', { class: 'actions', id: 'rollout-actions' }, buttons) : null;
}

function filterBar(grid, count, beside) {
  const state = h('select', { id: 'target-state' }, h('option', { value: '' }, 'Every state'), targetStates.map(([s]) => h('option', { value: s }, s)));
  const text = h('input', { type: 'text', id: 'target-filter', spellcheck: 'false', placeholder: 'sv-12 or eu-central' });
  const apply = () => count(grid.filter(state.value, text.value));
  state.addEventListener('change', apply);
  text.addEventListener('input', apply);
  return { el: h('div', { class: 'bar', role: 'search', 'aria-label': 'Filter the targets' },
    h('div', { class: 'field' }, h('label', { for: 'target-state' }, 'State'), state),
    h('div', { class: 'field' }, h('label', { for: 'target-filter' }, 'Supervisor or region contains'), text), beside), apply };
}

export async function rolloutPage(ctx) {
  const [id] = ctx.params;
  const svc = await call('GET', servicePath(id));
  if (ctx.signal.aborted) return;
  const head = h('div', { 'aria-live': 'polite' });
  const bar = h('div', {});
  const wavesOut = h('div', {});
  const legendOut = h('div', { class: 'legend-box' });
  const shownOut = h('p', { class: 'muted', id: 'targets-shown' });
  const detail = h('div', { id: 'target-detail', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Focus or click a target to see its details.'));
  const quarantine = h('div', {});
  const grid = targetGrid((t) => detail.replaceChildren(targetDetail(t)));
  let total = 0;
  const filter = filterBar(grid, (n) => shownOut.replaceChildren(`Showing ${n} of ${total} targets.`), legendOut);
  const body = h('div', { id: 'rollout', hidden: true }, bar,
    h('h2', { id: 'targets-h' }, 'Targets'), filter.el, shownOut, h('div', { class: 'grid-and-detail' }, grid.el, detail),
    h('h2', {}, 'Waves'), wavesOut);
  ctx.main.append(h('p', {}, h('a', { href: `#/services/${encodeURIComponent(id)}` }, `← ${svc.name}`), ' · ', h('a', { href: '#/rollouts' }, 'Rollouts')),
    h('h1', {}, `Rollout of ${svc.name}`), head, body, quarantine);

  let last = '';
  const showQuarantine = async () => {
    try {
      const q = await quarantineSection(ctx, svc.name, () => { showQuarantine(); refresh(); });
      if (!ctx.signal.aborted) quarantine.replaceChildren(q);
    } catch (err) {
      if (!ctx.signal.aborted) ctx.showError(err);
    }
  };
  // The heading part and the buttons are rebuilt only when they change,
  // so a refresh neither moves the focus nor repeats the live region.
  let shown = '';
  const draw = (r) => {
    body.hidden = false;
    body.dataset.state = r.state;
    total = (r.targets || []).length;
    const now = [r.state, r.paused, r.wave, r.reason, r.operationId].join('/');
    if (now !== shown) drawHead(r);
    shown = now;
    wavesOut.replaceChildren(wavesTable(r));
    legendOut.replaceChildren(legend(r.targets || []));
    grid.update(r);
    filter.apply();
    if (r.state !== last) { last = r.state; showQuarantine(); }
  };
  const drawHead = (r) => {
    head.replaceChildren(h('div', { class: 'progress', id: 'rollout-state', 'data-state': r.state },
      badge(r.state), h('span', { class: 'mono' }, `${r.fromVersion} → ${r.toVersion}`), h('span', {}, `wave ${r.wave} of ${(r.waves || []).length}`),
      h('span', { class: 'muted mono' }, r.operationId)),
    r.reason ? alert(r.state === 'Succeeded' ? 'info' : 'warn', 'Reason:', r.reason) : null);
    bar.replaceChildren(actions(ctx, id, r, refresh) || '');
  };
  let known = !!svc.rollout;
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        // Until the service shows a rollout (one laid its waves out), its
        // rollout is not asked for: that would answer 404.
        if (!known) known = !!(await call('GET', servicePath(id))).rollout;
        if (ctx.signal.aborted) return;
        if (known) {
          const r = await call('GET', servicePath(id, '/rollout'));
          if (ctx.signal.aborted) return;
          draw(r);
        } else {
          head.replaceChildren(h('p', { id: 'no-rollout' }, `${svc.name} has no rollout (yet): an upgrade with a rollout strategy lays its waves out here.`));
          if (!last) { last = 'none'; showQuarantine(); }
        }
      } while (again && !ctx.signal.aborted);
    } catch (err) {
      if (!ctx.signal.aborted) ctx.showError(err);
    } finally {
      busy = false;
    }
  }
  await refresh();
  watchService(id, ctx.signal, () => refresh()).catch((err) => { if (!ctx.signal.aborted && err.status !== 404) ctx.showError(err); });
  // Target states change without the service changing: look again every
  // two seconds while a rollout runs (without one, the watch stream says
  // when an upgrade starts).
  const timer = setInterval(() => { if (last && last !== 'none' && !ENDED.includes(last)) refresh(); }, 2000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}
