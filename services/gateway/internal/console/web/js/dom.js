// Building the page without HTML strings: every value is set as text, so
// nothing a service or a user wrote can become markup (the CSP's Trusted
// Types refuse innerHTML anyway).

// h creates an element: attributes (on* are listeners, class, booleans)
// and children (nodes, strings, nested arrays; null and false skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  add(el, children);
  return el;
}

// add appends children to el.
export function add(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// The colour family of every status, outcome and severity the API
// returns; the text is always shown too, so colour is never the only cue.
const families = {
  healthy: 'ok', succeeded: 'ok', passed: 'ok', ready: 'ok', active: 'ok', created: 'ok',
  busy: 'busy', running: 'busy', maintenance: 'warn', pending: 'idle',
  unhealthy: 'bad', failed: 'bad', error: 'bad', stuck: 'bad', unavailable: 'bad', decommissioned: 'bad',
  warning: 'warn', warn: 'warn', paused: 'warn', rolledback: 'warn', reconfigured: 'warn',
  info: 'info', unresolved: 'info', inactive: 'idle', unchanged: 'idle', skipped: 'idle',
  // Rollouts, their waves and targets.
  done: 'ok', waitingapproval: 'warn', rollingback: 'warn', rollbackrefused: 'bad', blocked: 'warn',
  moving: 'busy', verifying: 'busy', waitingforwindow: 'info',
};

// badge shows a status-like value.
export function badge(value, title) {
  const text = value || '—';
  const fam = families[String(value || '').toLowerCase().replace(/[^a-z]/g, '')] || 'idle';
  return h('span', { class: `badge b-${fam}`, title }, text);
}

const marks = { ERROR: '✖ ', WARNING: '⚠ ', WARN: '⚠ ', INFO: 'ℹ ' };

// severity shows ERROR, WARNING and INFO distinctly: colour, mark and word.
export function severity(sev) {
  const s = String(sev || '').toUpperCase();
  return h('span', { class: 'sev' }, badge(s ? (marks[s] || '') + s : '—'));
}

// table builds a table from column headings (text, or [text, class])
// and rows.
export function table(caption, headings, rows, attrs) {
  const th = (t) => (Array.isArray(t) ? h('th', { scope: 'col', class: t[1] }, t[0]) : h('th', { scope: 'col' }, t));
  return h('div', { class: 'scroll' }, h('table', attrs || {},
    caption ? h('caption', {}, caption) : null,
    h('thead', {}, h('tr', {}, headings.map(th))),
    h('tbody', {}, rows)));
}

// facts is a definition list of [term, value] pairs (empty values skipped).
export function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// when formats an RFC 3339 time in the reader's locale.
export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? t : d.toLocaleString();
}

// alert is a message box: kind error, ok, warn or info.
export function alert(kind, title, text) {
  return h('div', { class: `alert alert-${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    title ? [h('strong', {}, title), ' '] : null, text);
}

// confirmDialog asks a question in a modal dialog and resolves true when
// the user confirms; Escape or Cancel resolve false.
export function confirmDialog(title, body, confirmLabel, danger) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { 'aria-labelledby': 'dlg-title' },
      h('h2', { id: 'dlg-title' }, title), h('div', {}, body),
      h('form', { method: 'dialog', class: 'actions' },
        h('button', { value: 'cancel', class: 'secondary', id: 'dlg-cancel' }, 'Cancel'),
        h('button', { value: 'confirm', class: danger ? 'danger' : '', id: 'dlg-confirm' }, confirmLabel)));
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'confirm');
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}
