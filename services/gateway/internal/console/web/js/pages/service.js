// A service: its state per region and Supervisor, values with their
// provenance, access grants, history and signatures, live from its watch
// stream, with the lifecycle actions the caller's role allows.
import { h, badge, severity, table, facts, when, alert, confirmDialog } from '../dom.js';
import { call, servicePath, packageMetadata } from '../api.js';
import { watchService, progressView } from '../live.js';

function section(id, title, ...body) {
  return h('section', { id, 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), body);
}

// resourcesByPlace groups resources per region, then Supervisor; those
// of no Supervisor (VCF Automation and vCenter kinds) come last.
function resourcesByPlace(resources) {
  const groups = new Map();
  for (const r of resources) {
    const key = r.supervisor ? `${r.region || '—'} · Supervisor ${r.supervisor}` : '';
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  const order = ([a], [b]) => (a === '' ? 1 : b === '' ? -1 : a.localeCompare(b));
  return [...groups.entries()].sort(order).map(([key, rs]) => h('div', { class: 'place' },
    h('h3', {}, key ? `Region ${key}` : 'Platform-wide (VCF Automation, vCenter)'),
    table(null, ['Type', 'Name', ['Namespace', 'wide'], 'Status', 'Message', ['Owner version', 'wide'], ['Last change', 'wide']],
      rs.map((r) => h('tr', {}, h('td', {}, r.type), h('td', { class: 'mono' }, r.logicalName || r.name),
        h('td', { class: 'mono wide' }, r.namespace), h('td', {}, badge(r.status)), h('td', {}, r.message),
        h('td', { class: 'wide' }, r.ownerVersion), h('td', { class: 'wide' }, when(r.lastModified)))))));
}

function stateSection(state) {
  const st = state || {};
  const resources = st.resources || [];
  const problems = st.errorDetails || [];
  const checks = st.resourceChecks || [];
  return section('state', 'State',
    resources.length ? resourcesByPlace(resources) : h('p', { class: 'muted' }, 'No resource is applied (the service is not active, or it renders none).'),
    problems.length ? [h('h3', {}, 'Messages'), table(null, ['Severity', 'Type', 'Message'],
      problems.map((e) => h('tr', {}, h('td', {}, severity(e.severity)), h('td', {}, e.type), h('td', {}, e.message))), { id: 'error-details' })] : null,
    st.preCheckStatus ? [h('h3', {}, 'Pre-checks ', badge(st.preCheckStatus)), table(null, ['Resource', 'Supervisor', 'Status', 'Checks'],
      checks.map((c) => h('tr', {}, h('td', {}, `${c.type} ${c.name}`), h('td', {}, c.supervisor), h('td', {}, badge(c.status)),
        h('td', {}, (c.checks || []).map((k) => h('div', {}, badge(k.status), ' ', k.name, k.message ? `: ${k.message}` : ''))))))] : null,
    (st.orphanedResources || []).length ? [h('h3', {}, 'Left behind by a force delete'), table(null, ['Type', 'Name', 'Supervisor'],
      st.orphanedResources.map((r) => h('tr', {}, h('td', {}, r.type), h('td', {}, r.name), h('td', {}, r.supervisor))))] : null);
}

// renderFailed shows why a render the page asked for failed.
function renderFailed(r) {
  return r && r.error ? alert('error', r.error.title || 'Error', `could not render: ${r.error.message}`) : null;
}

function valuesSection(prov) {
  if (renderFailed(prov)) return section('values', 'Values and their provenance', renderFailed(prov));
  const entries = (prov && prov.entries) || [];
  return section('values', 'Values and their provenance',
    h('p', { class: 'muted' }, 'Every leaf of the effective values, with the layer that set it: inventory, platform overlay, vendor transpiler, user overwrite, or the schema default.'),
    entries.length ? table(null, ['Key', 'Layer', 'Value'], entries.map((e) => h('tr', {},
      h('td', { class: 'mono' }, e.path), h('td', {}, badge(e.layer)), h('td', { class: 'mono' }, e.value))), { id: 'provenance' })
      : h('p', {}, 'No values.'));
}

export function grantsList(grants) {
  const systems = Object.entries(grants || {});
  if (systems.length === 0) return h('p', {}, 'This service asks for no access.');
  return h('ul', { class: 'grants', id: 'grants' }, systems.map(([system, kinds]) => h('li', {}, h('strong', {}, system),
    h('ul', {}, Object.entries(kinds || {}).map(([kind, names]) => h('li', {}, `${kind}: `, h('span', { class: 'mono' }, [names].flat().join(', '))))))));
}

function grantsSection(svc, grants) {
  const acc = svc.accepted || {};
  return section('grants-section', 'Access grants',
    facts([['EULA accepted', acc.eula ? 'yes' : 'no'], ['Signatures accepted', acc.signatures ? 'yes' : 'no']]),
    h('h3', {}, 'What the service renders now'), renderFailed(grants) || grantsList(grants));
}

function historySection(hist) {
  const ops = ((hist && hist.operations) || []).slice().reverse();
  return section('history', 'History',
    hist && hist.lastKnownGoodVersion ? facts([['Last known good version', hist.lastKnownGoodVersion]]) : null,
    table(null, ['Operation', 'Versions', 'Outcome', ['By', 'wide'], 'Started', ['Steps', 'wide']], ops.map((op) => h('tr', {},
      h('td', {}, op.type), h('td', { class: 'mono' }, op.fromVersion && op.toVersion && op.fromVersion !== op.toVersion ? `${op.fromVersion} → ${op.toVersion}` : op.toVersion || op.fromVersion),
      h('td', {}, badge(op.outcome)), h('td', { class: 'wide' }, op.requestedBy), h('td', {}, when(op.startedAt)),
      h('td', { class: 'wide' }, h('details', {}, h('summary', {}, `${(op.steps || []).length} steps`),
        h('ol', {}, (op.steps || []).map((s) => h('li', {}, badge(s.status), ' ', s.name, s.message ? ` — ${s.message}` : ''))))))), { id: 'history-table' }));
}

function signaturesSection(sig) {
  const s = sig || {};
  return section('signatures', 'Signatures',
    facts([['Valid', s.isValid ? 'yes' : 'no'], ['Checked', when(s.validationTime)]]),
    (s.details || []).length ? table(null, ['Type', 'Digest', 'Message'], s.details.map((d) => h('tr', {},
      h('td', {}, d.type), h('td', { class: 'mono' }, d.digest), h('td', {}, d.message)))) : h('p', { class: 'muted' }, 'The bundle carries no signature.'));
}

async function act(ctx, title, body, label, danger, run) {
  if (!(await confirmDialog(title, body, label, danger))) return;
  try {
    await run();
  } catch (err) {
    ctx.showError(err);
  }
}

function actions(ctx, svc) {
  if (!ctx.session.can('services.write')) return null;
  const id = svc.id;
  const patch = (body) => call('PATCH', servicePath(id), body);
  const st = svc.lifecycleState;
  const buttons = [];
  if (st === 'inactive') buttons.push(h('a', { class: 'button', href: `#/services/${encodeURIComponent(id)}/activate`, id: 'activate' }, 'Activate…'));
  if (st === 'active' || st === 'paused') buttons.push(h('a', { class: 'button', href: `#/services/${encodeURIComponent(id)}/upgrade`, id: 'upgrade' }, 'Upgrade or roll back…'));
  if (st === 'active') {
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'pause', onclick: () => act(ctx, 'Pause reconciliation?', `Controllers skip ${svc.name} until it is resumed.`, 'Pause', false, () => patch({ lifecycleState: 'paused' })) }, 'Pause'));
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'deactivate', onclick: () => act(ctx, 'Deactivate?', `${svc.name}'s resources are removed from its targets; it stays registered.`, 'Deactivate', true, () => patch({ lifecycleState: 'inactive' })) }, 'Deactivate'));
  }
  if (st === 'paused') buttons.push(h('button', { type: 'button', class: 'secondary', id: 'resume', onclick: () => act(ctx, 'Resume?', `Controllers reconcile ${svc.name} again.`, 'Resume', false, () => patch({ lifecycleState: 'active' })) }, 'Resume'));
  if (st !== 'decommissioned') {
    const force = h('input', { type: 'checkbox', id: 'force-delete' });
    buttons.push(h('button', { type: 'button', class: 'danger', id: 'delete', onclick: () => act(ctx, `Delete ${svc.name}?`,
      [h('p', {}, 'Every resource is removed from its target (finalizers honoured), then the service.'),
        h('label', { class: 'check' }, force, 'Force: do not wait for unreachable targets (audit them afterwards)')],
      'Delete', true, () => call('DELETE', servicePath(id, `?forceDelete=${force.checked}`))) }, 'Delete'));
  }
  return h('div', { class: 'actions', id: 'actions' }, buttons);
}

async function load(id) {
  const [svc, hist] = await Promise.all([
    call('GET', servicePath(id, '?state=true&signatures=true&metadata=true')),
    call('GET', servicePath(id, '/history')),
  ]);
  // Renders need a downloaded bundle: not while it is still Busy creating.
  const rendered = svc.status !== 'Busy' || svc.lifecycleState !== 'inactive';
  const [prov, grants] = rendered ? await Promise.all([
    call('POST', servicePath(id, '/render-value-provenance'), {}).catch((error) => ({ error })),
    call('POST', servicePath(id, '/render-access-grants'), {}).catch((error) => ({ error })),
  ]) : [null, null];
  return { svc, hist, prov, grants };
}

export async function servicePage(ctx) {
  const [id] = ctx.params;
  const data = await load(id);
  if (ctx.signal.aborted) return;
  const { svc } = data;
  const meta = packageMetadata(svc);
  const progress = h('div', { 'aria-live': 'polite' }, progressView(svc));
  const body = h('div', {});
  const draw = (d) => body.replaceChildren(stateSection(d.svc.state), valuesSection(d.prov), grantsSection(d.svc, d.grants),
    historySection(d.hist), signaturesSection(d.svc.signatures));
  const actionBar = h('div', {}, actions(ctx, svc));
  ctx.main.append(h('p', {}, h('a', { href: '#/services' }, '← Services')),
    h('h1', {}, meta.displayName || svc.name, h('span', { class: 'mono muted' }, svc.version)),
    facts([['Package', svc.name], ['Id', h('span', { class: 'mono', id: 'service-id' }, svc.id)], ['Vendor', svc.vendor], ['Source', h('span', { class: 'mono' }, svc.source)],
      ['Namespace', svc.namespace], ['Upgrade available', svc.availableUpgrade], ['Auto upgrade', svc.autoUpgrade ? 'on' : 'off'], ['Auto rollback', svc.autoRollback ? 'on' : 'off'],
      ['Rollout', svc.rollout ? h('a', { href: `#/services/${encodeURIComponent(svc.id)}/rollout`, id: 'rollout-link' }, `${svc.rollout.state}, to ${svc.rollout.toVersion}`) : null]]),
    progress, actionBar, body);
  draw(data);
  let pending = null;
  let last = `${svc.status}/${svc.lifecycleState}/${svc.version}`;
  watchService(id, ctx.signal, (ev) => {
    progress.replaceChildren(progressView(ev));
    if (ev.deleted) {
      actionBar.replaceChildren(h('p', { id: 'deleted' }, 'This service has been deleted. ', h('a', { href: '#/services' }, 'Back to the services')));
      return;
    }
    const now = `${ev.status}/${ev.lifecycleState}/${ev.version}`;
    if (now === last) return;
    last = now;
    clearTimeout(pending);
    pending = setTimeout(async () => {
      try {
        const d = await load(id);
        if (ctx.signal.aborted) return;
        actionBar.replaceChildren(actions(ctx, d.svc) || '');
        draw(d);
      } catch (err) {
        if (!ctx.signal.aborted && err.status !== 404) ctx.showError(err);
      }
    }, 250);
  }).catch((err) => { if (!ctx.signal.aborted && err.status !== 404) ctx.showError(err); });
}
