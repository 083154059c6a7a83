// The upgrade page's changed terms: what the new version changes of what
// the administrator accepted (its EULA, its signature set, its access
// grants), as the upgrade plan reports it, each accepted with its own
// check box. The upgrade carries the acceptance only when every change is
// accepted; without it the server refuses, and the page says why.
import { h, table, alert } from './dom.js';
import { grantsList } from './pages/service.js';

// what is each change's check box id, its explanation and its label, by
// the plan's acceptanceRequired entry; names are the headings' words.
const names = { eula: 'the EULA', signatures: 'the signature set', accessGrants: 'the access grants' };
const what = {
  eula: ['accept-terms-eula', 'The license terms (EULA) differ from the ones accepted.', (v) => `I accept the license terms of ${v}.`],
  signatures: ['accept-terms-signatures', 'The bundle is signed by a different set of signers than the one accepted.', (v) => `I accept the signature set of ${v}.`],
  accessGrants: ['accept-terms-grants', 'The access grants differ from the ones granted.', (v) => `I grant ${v} exactly the access rights above.`],
};

function grantRows(diff) {
  const row = (change, g) => h('tr', { 'data-change': change }, h('td', {}, change === 'added' ? '+ added' : '− removed'),
    h('td', {}, g.category), h('td', {}, g.key), h('td', { class: 'mono' }, g.value));
  return [...(diff.added || []).map((g) => row('added', g)), ...(diff.removed || []).map((g) => row('removed', g))];
}

function grantsPart(plan) {
  const rows = grantRows(plan.accessGrantsDiff || {});
  return h('div', { id: 'terms-grants' },
    rows.length ? table(null, ['Change', 'System', 'Kind', 'Name'], rows, { id: 'grants-diff' }) : null,
    h('p', {}, `The access grants of ${plan.toVersion}, as the upgrade sends them:`), grantsList(plan.accessGrants),
    h('details', {}, h('summary', {}, 'As sent (JSON)'), h('pre', { class: 'mono', id: 'terms-grants-json' }, JSON.stringify(plan.accessGrants || {}, null, 2))));
}

// changedTerms is the plan's part on the terms to accept (null when the
// new version changes none). accepted() is the upgrade request's
// `accepted` when every change is checked, else undefined; refused(err)
// shows the server's refusal beside the boxes (null: clears it).
export function changedTerms(plan, canWrite) {
  const required = (plan.acceptanceRequired || []).filter((r) => what[r]);
  if (required.length === 0) return null;
  const boxes = [];
  const refusal = h('div', { id: 'terms-refusal' });
  const items = required.map((r) => {
    const [id, text, label] = what[r];
    let box = null;
    if (canWrite) {
      box = h('input', { type: 'checkbox', id });
      boxes.push(box);
    }
    return h('li', { 'data-term': r }, h('p', {}, text), r === 'accessGrants' ? grantsPart(plan) : null,
      box ? h('label', { class: 'check' }, box, label(plan.toVersion)) : null);
  });
  const el = h('section', { id: 'terms', class: 'panel', 'aria-labelledby': 'terms-h' },
    h('h3', { id: 'terms-h', 'data-required': required.join(' ') }, `Changed terms to accept: ${required.map((r) => names[r]).join(', ')}`),
    h('p', {}, `${plan.toVersion} changes what was accepted for ${plan.fromVersion}. The upgrade carries your acceptance only when you accept every change; without it the server refuses the upgrade.`),
    h('ul', { id: 'terms-list' }, items), refusal);
  return {
    el,
    accepted: () => (boxes.length && boxes.every((b) => b.checked)
      ? { eula: true, signatures: true, accessGrants: plan.accessGrants || {} } : undefined),
    refused: (err) => refusal.replaceChildren(...(err ? [alert('error', `Refused: ${err.title || 'Error'}.`, err.message)] : [])),
  };
}
