// Quarantined versions: a version a rollout rolled back from (or one an
// administrator set aside) is skipped by automatic upgrades and refused
// to a manual one until an administrator clears it. Listed for everyone;
// Clear is offered to administrators only (the server decides anyway).
import { h, table, when, confirmDialog } from './dom.js';
import { call } from './api.js';

const versionPath = (v) => `/v2/vcf-service-versions/${encodeURIComponent(v.name)}/${encodeURIComponent(v.version)}/quarantine`;

// quarantineSection lists the quarantined versions of the catalog (of one
// package when name is set); onChange runs after a version is cleared.
export async function quarantineSection(ctx, name, onChange) {
  const q = name ? `?${new URLSearchParams({ name })}` : '';
  const list = await call('GET', `/v2/vcf-service-versions${q}`);
  const held = (list.versions || []).filter((v) => v.quarantine);
  const admin = ctx.session.can('admin');
  const clear = async (v) => {
    if (!(await confirmDialog(`Clear the quarantine of ${v.name} ${v.version}?`,
      h('p', {}, 'Automatic upgrades may pick it again and administrators may upgrade to it.'), 'Clear'))) return;
    try {
      await call('DELETE', versionPath(v));
      if (onChange) onChange();
    } catch (err) {
      ctx.showError(err);
    }
  };
  return h('section', { id: 'quarantine', 'aria-labelledby': 'quarantine-h' },
    h('h2', { id: 'quarantine-h' }, 'Quarantined versions'),
    held.length === 0 ? h('p', { class: 'muted', id: 'no-quarantine' }, name ? `No version of ${name} is quarantined.` : 'No version is quarantined.')
      : table(null, ['Package', 'Version', 'Reason', ['Rollout', 'wide'], 'By', 'Since', ''], held.map((v) => h('tr', { 'data-version': `${v.name}@${v.version}` },
        h('td', {}, v.name), h('td', { class: 'mono' }, v.version), h('td', {}, v.quarantine.reason),
        h('td', { class: 'mono wide' }, v.quarantine.rollout), h('td', {}, v.quarantine.by), h('td', {}, when(v.quarantine.at)),
        h('td', {}, admin ? h('button', { type: 'button', class: 'secondary', id: `clear-${v.name}-${v.version}`, onclick: () => clear(v) }, `Clear ${v.version}`) : null))),
      { id: 'quarantined' }));
}
