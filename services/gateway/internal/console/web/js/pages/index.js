// The console's pages: one entry each, in navigation order. A new page
// (the fleet Rollouts page, when rollouts exist) is one module under
// pages/ and one entry here: the router, the navigation and the sign-in
// guard all read this table.
import { servicesPage } from './services.js';
import { servicePage } from './service.js';
import { createPage } from './create.js';
import { activatePage } from './activate.js';
import { upgradePage } from './upgrade.js';
import { inventoryPage } from './inventory.js';

// Each page: pattern (matched against the path after '#'; groups are the
// page's params), render(ctx), and, for pages in the navigation, a nav
// label and the permission the page needs to be offered at all.
export const pages = [
  { pattern: /^\/services$/, render: servicesPage, nav: 'Services', href: '#/services' },
  { pattern: /^\/services\/([^/]+)$/, render: servicePage, navOf: '#/services' },
  { pattern: /^\/services\/([^/]+)\/activate$/, render: activatePage, navOf: '#/services' },
  { pattern: /^\/services\/([^/]+)\/upgrade$/, render: upgradePage, navOf: '#/services' },
  { pattern: /^\/create$/, render: createPage, nav: 'Create', href: '#/create', needs: 'services.write' },
  { pattern: /^\/inventory$/, render: inventoryPage, nav: 'Inventory', href: '#/inventory' },
];
