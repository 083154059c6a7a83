// Activate: the EULA, the signatures and the exact rendered access grants,
// each shown and accepted, then PATCH lifecycleState active with exactly
// what was shown.
import { h, badge, table, facts, when, alert } from '../dom.js';
import { call, servicePath, packageMetadata } from '../api.js';
import { grantsList } from './service.js';

function acceptBox(id, text, disabled) {
  return h('label', { class: 'check' }, h('input', { type: 'checkbox', id, disabled }), text);
}

export async function activatePage(ctx) {
  const [id] = ctx.params;
  const [svc, grants, pkg] = await Promise.all([
    call('GET', servicePath(id, '?metadata=true&signatures=true')),
    call('POST', servicePath(id, '/render-access-grants'), {}),
    call('GET', servicePath(id, '/package')),
  ]);
  if (ctx.signal.aborted) return;
  const meta = packageMetadata(svc);
  const sig = svc.signatures || {};
  const canWrite = ctx.session.can('services.write');
  const back = h('p', {}, h('a', { href: `#/services/${encodeURIComponent(id)}` }, `← ${svc.name}`));
  ctx.main.append(back, h('h1', {}, `Activate ${meta.displayName || svc.name}`, h('span', { class: 'mono muted' }, svc.version)));
  if (svc.lifecycleState !== 'inactive') {
    ctx.main.append(alert('info', 'Nothing to activate:', `the service is ${svc.lifecycleState}.`));
    return;
  }
  const eula = h('section', { class: 'panel', 'aria-labelledby': 'eula-h' }, h('h2', { id: 'eula-h' }, '1. End-user license agreement'),
    facts([['Service', meta.displayName || svc.name], ['Provider', meta.providerName], ['Summary', meta.shortDescription], ['Description', meta.longDescription], ['Support', meta.supportDescription]]),
    h('details', {}, h('summary', {}, 'The package document (its licenses and values schema)'), h('pre', { class: 'mono' }, pkg)),
    canWrite ? acceptBox('accept-eula', `I accept the license terms of ${svc.name} ${svc.version}.`) : null);
  const signatures = h('section', { class: 'panel', 'aria-labelledby': 'sig-h' }, h('h2', { id: 'sig-h' }, '2. Signatures'),
    facts([['Valid', badge(sig.isValid ? 'Passed' : 'Failed', sig.isValid ? 'every signature verified' : 'not verified')], ['Checked', when(sig.validationTime)]]),
    (sig.details || []).length ? table(null, ['Type', 'Digest', 'Message'], sig.details.map((d) => h('tr', {}, h('td', {}, d.type), h('td', { class: 'mono' }, d.digest), h('td', {}, d.message))))
      : h('p', { class: 'muted' }, 'The bundle carries no signature.'),
    canWrite ? acceptBox('accept-signatures', 'I accept the bundle’s signatures as shown.') : null);
  const access = h('section', { class: 'panel', 'aria-labelledby': 'grants-h' }, h('h2', { id: 'grants-h' }, '3. Access grants'),
    h('p', {}, 'Rendered now from this bundle and the platform inventory; activation sends exactly this object.'),
    grantsList(grants),
    h('details', {}, h('summary', {}, 'As sent (JSON)'), h('pre', { class: 'mono', id: 'grants-json' }, JSON.stringify(grants, null, 2))),
    canWrite ? acceptBox('accept-grants', 'I grant exactly these access rights.') : null);
  ctx.main.append(eula, signatures, access);
  if (!canWrite) {
    ctx.main.append(h('p', { class: 'muted' }, `Your role (${ctx.session.identity().role}) may read this page but not activate.`));
    return;
  }
  const button = h('button', { type: 'button', id: 'activate-now', disabled: true }, 'Activate');
  const boxes = ['accept-eula', 'accept-signatures', 'accept-grants'].map((b) => ctx.main.querySelector(`#${b}`));
  boxes.forEach((b) => b.addEventListener('change', () => { button.disabled = !boxes.every((x) => x.checked); }));
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      await call('PATCH', servicePath(id), { lifecycleState: 'active', accepted: { eula: true, signatures: true, accessGrants: grants } });
      ctx.navigate(`#/services/${encodeURIComponent(id)}`);
    } catch (err) {
      button.disabled = false;
      ctx.showError(err);
    }
  });
  ctx.main.append(h('div', { class: 'actions' }, button));
}
