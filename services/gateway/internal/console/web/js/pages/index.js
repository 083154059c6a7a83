// The console's pages: one entry each, in navigation order. A new page
// is one module under pages/ and one entry here: the router, the
// navigation and the sign-in guard all read this table.
//
// Each page: pattern (matched against the path after '#'; groups are the
// page's params), load (its render function, imported when the page is
// first shown, so a page load runs only the code it shows), and, for pages
// in the navigation, a nav label and the permission the page needs to be
// offered at all.
export const pages = [
  { pattern: /^\/services$/, load: () => import('./services.js').then((m) => m.servicesPage), nav: 'Services', href: '#/services' },
  { pattern: /^\/services\/([^/]+)$/, load: () => import('./service.js').then((m) => m.servicePage), navOf: '#/services' },
  { pattern: /^\/services\/([^/]+)\/activate$/, load: () => import('./activate.js').then((m) => m.activatePage), navOf: '#/services' },
  { pattern: /^\/services\/([^/]+)\/upgrade$/, load: () => import('./upgrade.js').then((m) => m.upgradePage), navOf: '#/services' },
  { pattern: /^\/services\/([^/]+)\/rollout$/, load: () => import('./rollout.js').then((m) => m.rolloutPage), navOf: '#/rollouts' },
  { pattern: /^\/create$/, load: () => import('./create.js').then((m) => m.createPage), nav: 'Create', href: '#/create', needs: 'services.write' },
  { pattern: /^\/rollouts$/, load: () => import('./rollouts.js').then((m) => m.rolloutsPage), nav: 'Rollouts', href: '#/rollouts' },
  { pattern: /^\/inventory$/, load: () => import('./inventory.js').then((m) => m.inventoryPage), nav: 'Inventory', href: '#/inventory' },
];
