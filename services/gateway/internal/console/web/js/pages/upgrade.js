// Upgrade, as upgrade.md describes it: the versions the service can move
// to, the plan (compatibility and hook results by severity, dynamic
// pre-checks, the inherited configuration, the changed terms to accept,
// every resource's change), then confirm, live progress, and roll back.
import { h, badge, severity, table, facts, alert, confirmDialog } from '../dom.js';
import { call, servicePath } from '../api.js';
import { watchService, progressView } from '../live.js';
import { lineDiff } from '../diff.js';
import { strategyPicker, fleetPlanView } from '../fleetplan.js';
import { changedTerms } from '../terms.js';

// newer orders versions by their numeric segments (1.10.0 > 1.9.0).
function newer(a, b) {
  const pa = String(a).split(/[.+-]/);
  const pb = String(b).split(/[.+-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = parseInt(pa[i] || '0', 10);
    const y = parseInt(pb[i] || '0', 10);
    if (x !== y) return x > y;
  }
  return false;
}

function resultsTable(id, results) {
  return table(null, ['Severity', 'Check', 'Subject', 'Message'], results.map((r) => h('tr', { 'data-severity': r.severity },
    h('td', {}, severity(r.severity)), h('td', {}, r.kind), h('td', {}, r.subject),
    h('td', {}, r.message, r.expression ? h('div', { class: 'muted mono' }, `${r.expression} against ${r.checkedVersion || '—'}`) : null))), { id });
}

function hookPart(hook) {
  if (!hook || !hook.configured) return h('p', { id: 'hook-none' }, 'The installed version declares no pre-check hook.');
  return h('div', { id: 'hook' }, facts([['Endpoint', h('span', { class: 'mono' }, hook.endpoint)], ['Verdict', badge(hook.blocked ? 'Failed' : 'Passed')]]),
    hook.failure ? alert('error', 'The hook could not answer:', hook.failure) : null,
    (hook.results || []).length ? resultsTable('hook-results', hook.results) : h('p', {}, 'The hook returned no result: compatible.'));
}

function resourcesPart(resources) {
  return table(null, ['Type', 'Name', 'Supervisor', 'Action', 'Change'], resources.map((r) => h('tr', {},
    h('td', {}, r.type), h('td', { class: 'mono' }, r.name), h('td', {}, r.supervisor), h('td', {}, badge(r.action)),
    h('td', {}, r.action === 'unchanged' ? '' : h('details', {}, h('summary', {}, 'Diff'), lineDiff(r.currentYaml, r.plannedYaml))))), { id: 'plan-resources' });
}

function planView(plan, terms) {
  const compat = plan.compatibility || [];
  const dyn = plan.dynamicChecks || {};
  const warnings = [...compat, ...((plan.hook || {}).results || [])].filter((r) => /^WARN/i.test(r.severity)).length;
  return h('section', { id: 'plan', 'data-allowed': String(!!plan.allowed), 'aria-labelledby': 'plan-h' },
    h('h2', { id: 'plan-h' }, `Plan: ${plan.fromVersion} → ${plan.toVersion}`),
    plan.allowed
      ? alert('ok', 'The upgrade can proceed.', warnings ? `${warnings} warning${warnings > 1 ? 's' : ''} to read below.` : '')
      : h('div', { class: 'alert alert-error', role: 'alert', id: 'blocked' }, h('strong', {}, 'Blocked.'),
        h('ul', { id: 'blocking-reasons' }, (plan.blockingReasons || []).map((r) => h('li', {}, r)))),
    terms ? terms.el : null,
    (plan.suggestedPath || []).length ? h('p', { id: 'suggested-path' }, 'Suggested path: ', h('span', { class: 'mono' }, [plan.fromVersion, ...plan.suggestedPath].join(' → '))) : null,
    h('h3', {}, 'Compatibility'), compat.length ? resultsTable('compatibility', compat) : h('p', {}, 'No constraint applies.'),
    h('h3', {}, 'Pre-check hook'), hookPart(plan.hook),
    dyn.preCheckStatus ? [h('h3', {}, 'Dynamic pre-checks ', badge(dyn.preCheckStatus)), table(null, ['Resource', 'Supervisor', 'Status', 'Checks'],
      (dyn.resourceChecks || []).map((c) => h('tr', {}, h('td', {}, `${c.type} ${c.name}`), h('td', {}, c.supervisor), h('td', {}, badge(c.status)),
        h('td', {}, (c.checks || []).map((k) => h('div', {}, badge(k.status), ' ', k.name, k.message ? `: ${k.message}` : ''))))))] : null,
    (plan.configurationErrors || []).length ? [h('h3', {}, 'Inherited configuration'), h('ul', { id: 'configuration-errors' }, plan.configurationErrors.map((e) => h('li', {}, e)))] : null,
    (plan.targets || []).length ? fleetPlanView(plan) : null,
    h('h3', {}, 'Resources'), resourcesPart(plan.resources || []));
}

// follow shows a started operation live until the service settles.
function follow(ctx, id, out, goal) {
  out.replaceChildren(h('h2', {}, goal.title), h('div', { 'aria-live': 'polite' }, h('p', {}, 'Starting…')));
  const live = out.lastChild;
  watchService(id, ctx.signal, (ev) => {
    const op = ev.operation || {};
    const done = ev.status === 'Healthy' && ev.version === goal.version && (!op.type || op.outcome === 'Succeeded');
    const failed = ['Failed', 'Stuck', 'RolledBack'].includes(op.outcome) || ev.status === 'Unhealthy';
    live.replaceChildren(progressView(ev),
      done ? alert('ok', goal.doneText, h('a', { href: `#/services/${encodeURIComponent(id)}` }, 'See the service')) : null,
      failed && !done ? alert('error', `${op.type || 'The operation'} ${op.outcome || 'failed'}:`, `${op.message || 'see the service state'}. Roll back below, or fix and retry.`) : null);
  }).catch((err) => { if (!ctx.signal.aborted) ctx.showError(err); });
}

function planControls(ctx, svc, catalog, showPlan, picker) {
  const candidates = catalog.filter((v) => v.name === svc.name && newer(v.version, svc.version));
  const source = h('input', { type: 'text', id: 'upgrade-source', spellcheck: 'false', placeholder: 'oci://…/bundle:2.0.0 or https://…/service-2.0.0.tar' });
  const form = h('form', { class: 'bar', 'aria-label': 'Plan from a bundle source' },
    h('div', { class: 'field grow' }, h('label', { for: 'upgrade-source' }, 'Bundle source of the new version'), source),
    h('button', { type: 'submit', id: 'plan-source' }, 'Plan'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); showPlan({ source: source.value.trim() }, source.value.trim()); });
  return h('section', { 'aria-labelledby': 'versions-h' }, h('h2', { id: 'versions-h' }, 'Versions it can move to'),
    h('div', { class: 'bar' }, picker.el),
    candidates.length ? table(null, ['Version', 'Status', 'Source', ''], candidates.map((v) => h('tr', {},
      h('td', {}, v.version, v.version === svc.availableUpgrade ? [' ', badge('Suggested')] : null), h('td', {}, badge(v.status)),
      h('td', { class: 'mono' }, v.source),
      h('td', {}, h('button', { type: 'button', class: 'secondary', id: `plan-version-${v.version}`, onclick: () => showPlan({ targetVersion: v.version }, v.source) }, `Plan ${v.version}`)))), { id: 'versions' })
      : h('p', { class: 'muted' }, 'No newer version is registered in the catalog; plan from a bundle source.'),
    form);
}

function rollbackControls(ctx, svc, hist, out) {
  const versions = [...new Set((hist.operations || []).flatMap((op) => [op.fromVersion, op.toVersion]).filter((v) => v && v !== svc.version))];
  if (versions.length === 0) return null;
  const lkg = hist.lastKnownGoodVersion;
  const select = h('select', { id: 'rollback-version' }, versions.map((v) => h('option', { value: v, selected: v === lkg }, v === lkg ? `${v} (last known good)` : v)));
  const button = h('button', { type: 'button', class: 'danger', id: 'rollback' }, 'Roll back');
  button.addEventListener('click', async () => {
    const to = select.value;
    if (!(await confirmDialog(`Roll back ${svc.name} to ${to}?`, h('p', {}, `${svc.version}'s new resources are removed and ${to}'s restored. A SupervisorService already upgraded cannot be downgraded: the server refuses and says what to do.`), 'Roll back', true))) return;
    try {
      await call('POST', servicePath(svc.id, '/rollback'), { targetVersion: to });
      follow(ctx, svc.id, out, { title: `Rolling back to ${to}`, version: to, doneText: `Rolled back to ${to}.` });
    } catch (err) {
      ctx.showError(err);
    }
  });
  return h('section', { 'aria-labelledby': 'rollback-h' }, h('h2', { id: 'rollback-h' }, 'Roll back'),
    h('div', { class: 'bar' }, h('div', { class: 'field' }, h('label', { for: 'rollback-version' }, 'Version'), select), button));
}

export async function upgradePage(ctx) {
  const [id] = ctx.params;
  const svc = await call('GET', servicePath(id));
  const [catalog, hist, strategies] = await Promise.all([
    call('GET', `/v2/vcf-service-versions?${new URLSearchParams({ name: svc.name })}`),
    call('GET', servicePath(id, '/history')),
    call('GET', '/v2/rollout-strategies'),
  ]);
  const picker = strategyPicker(svc, strategies);
  if (ctx.signal.aborted) return;
  const canWrite = ctx.session.can('services.write');
  const planOut = h('div', { id: 'plan-out' });
  const progress = h('div', { id: 'operation' });
  const showPlan = async (req, source) => {
    planOut.replaceChildren(h('p', { 'aria-live': 'polite' }, 'Planning: compatibility, the pre-check hook, dynamic pre-checks, resources…'));
    try {
      const rollout = picker.request();
      const plan = await call('POST', servicePath(id, '/upgrade-plan'), { ...req, rollout });
      if (ctx.signal.aborted) return;
      const terms = changedTerms(plan, plan.allowed && canWrite);
      planOut.replaceChildren(planView(plan, terms));
      if (plan.allowed && canWrite) planOut.append(confirmUpgrade(ctx, { svc, plan, terms }, { source, rollout }, progress));
      planOut.querySelector('h2').scrollIntoView({ block: 'start' });
    } catch (err) {
      planOut.replaceChildren();
      ctx.showError(err);
    }
  };
  ctx.main.append(h('p', {}, h('a', { href: `#/services/${encodeURIComponent(id)}` }, `← ${svc.name}`)),
    h('h1', {}, `Upgrade ${svc.name}`, h('span', { class: 'mono muted' }, svc.version)),
    h('div', {}, progressView(svc)),
    planControls(ctx, svc, catalog.versions || [], showPlan, picker), planOut, progress,
    canWrite ? rollbackControls(ctx, svc, hist, progress) : null);
}

// confirmUpgrade is the upgrade's button: the request carries the changed
// terms' acceptance when every change is accepted on the page; a refusal
// shows at the top of the page and beside the terms.
function confirmUpgrade(ctx, { svc, plan, terms }, body, out) {
  const button = h('button', { type: 'button', id: 'start-upgrade' }, `Upgrade to ${plan.toVersion}`);
  button.addEventListener('click', async () => {
    const accepted = terms ? terms.accepted() : undefined;
    const unaccepted = terms && !accepted
      ? alert('warn', 'Changed terms not accepted:', `the server refuses an upgrade to ${plan.toVersion} that does not accept them.`) : null;
    if (!(await confirmDialog(`Upgrade ${svc.name} to ${plan.toVersion}?`, [h('p', {}, `${plan.fromVersion} enters maintenance while ${plan.toVersion} is installed with the inherited configuration; the checks run again before anything changes.`), unaccepted], 'Upgrade'))) return;
    try {
      await call('PATCH', servicePath(svc.id), accepted ? { ...body, accepted } : body);
      button.disabled = true;
      // An earlier refusal no longer holds.
      ctx.clearError();
      if (terms) terms.refused(null);
      // In waves: the rollout page follows it, wave by wave.
      if ((plan.targets || []).length) { ctx.navigate(`#/services/${encodeURIComponent(svc.id)}/rollout`); return; }
      follow(ctx, svc.id, out, { title: `Upgrading to ${plan.toVersion}`, version: plan.toVersion, doneText: `Upgraded to ${plan.toVersion}.` });
    } catch (err) {
      ctx.showError(err);
      if (terms) terms.refused(err);
    }
  });
  return h('div', { class: 'actions' }, button);
}
