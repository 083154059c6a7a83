// Inventory: the platform's regions and Supervisors with their versions.
import { h, table } from '../dom.js';
import { call } from '../api.js';

function supervisorRow(s) {
  const services = Object.keys(s.managementServices || {});
  return h('tr', {}, h('td', {}, s.name), h('td', { class: 'mono' }, s.id), h('td', { class: 'mono' }, s.version),
    h('td', { class: 'mono' }, s.kubernetesVersion), h('td', { class: 'wide' }, s.vcenterName),
    h('td', { class: 'wide' }, s.defaultStorageClass), h('td', { class: 'wide' }, services.join(', ')));
}

export async function inventoryPage(ctx) {
  const inv = await call('GET', '/v2/inventory');
  if (ctx.signal.aborted) return;
  const regions = inv.regions || [];
  const supervisors = regions.reduce((n, r) => n + (r.supervisors || []).length, 0);
  ctx.main.append(h('h1', {}, 'Inventory'),
    h('p', { class: 'muted' }, `${regions.length} regions, ${supervisors} Supervisors.`));
  if (regions.length === 0) {
    ctx.main.append(h('p', {}, 'The platform inventory is empty: load it with PUT /v2/inventory, vcfctl inventory set, or --inventory-file.'));
    return;
  }
  for (const r of regions) {
    ctx.main.append(h('section', { class: 'region', 'aria-labelledby': `region-${r.name}` },
      h('h2', { id: `region-${r.name}` }, `Region ${r.name}`),
      h('p', { class: 'muted' }, `Storage classes: ${(r.storageClasses || []).join(', ') || 'none'}`),
      table(null, ['Supervisor', 'Id', 'Version', 'Kubernetes', ['vCenter', 'wide'], ['Default storage class', 'wide'], ['Management services', 'wide']],
        (r.supervisors || []).map(supervisorRow))));
  }
}
