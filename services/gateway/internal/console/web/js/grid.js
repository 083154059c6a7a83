// The rollout's target grid: one small cell per Supervisor, coloured and
// marked by its state, grouped by wave, so a thousand targets read at a
// glance. The grid is one tab stop: the arrow keys, Home and End move
// inside it (a roving tabindex), and the focused or clicked cell's
// details show beside it. Cells are updated in place, so the focus and
// the filter survive a refresh.
import { h, badge } from './dom.js';

// The target states in the order they are told, each with its mark (the
// colour is never the only cue) and its colour family in console.css.
export const targetStates = [
  ['Pending', '·'], ['WaitingForWindow', '◷'], ['Blocked', '⊘'], ['Moving', '→'], ['Verifying', '◔'],
  ['Done', '✓'], ['Failed', '✖'], ['RollingBack', '↺'], ['RolledBack', '↩'],
];
const marks = Object.fromEntries(targetStates);

function label(t) {
  return `${t.supervisor}, region ${t.region || '—'}, wave ${t.wave}: ${t.state} on ${t.version || '—'}`;
}

function paint(cell, t) {
  cell.className = `cell s-${t.state}`;
  cell.textContent = marks[t.state] || '?';
  cell.dataset.state = t.state;
  cell.setAttribute('aria-label', label(t));
  cell.title = label(t);
}

// counts tallies targets by state.
export function counts(targets) {
  const n = {};
  for (const t of targets) n[t.state] = (n[t.state] || 0) + 1;
  return n;
}

// tally says "3 Done, 1 Failed" in the order of targetStates.
export function tally(n) {
  return targetStates.filter(([s]) => n[s]).map(([s]) => `${n[s]} ${s}`).join(', ') || 'no target';
}

// legend shows every state's mark, colour and count.
export function legend(targets) {
  const n = counts(targets);
  return h('ul', { class: 'legend', id: 'legend', 'aria-label': 'Target states' }, targetStates.map(([s, m]) => h('li', { 'data-state': s },
    h('span', { class: `cell s-${s}`, 'aria-hidden': 'true' }, m), ` ${s} `, h('strong', {}, String(n[s] || 0)))));
}

// targetGrid builds the grid; onSelect gets the target of the focused
// cell. It returns { el, update(rollout), filter(state, text) }.
export function targetGrid(onSelect) {
  const el = h('div', { id: 'targets', class: 'waves-grid' });
  const cells = new Map();
  let bySup = new Map();
  let current = null;
  let shape = '';

  const visible = (grid) => [...grid.children].filter((c) => !c.hidden);
  const focus = (cell) => {
    if (!cell) return;
    if (current && current !== cell) current.tabIndex = -1;
    current = cell;
    cell.tabIndex = 0;
    cell.focus();
  };
  el.addEventListener('focusin', (ev) => {
    const t = bySup.get(ev.target.dataset.sup);
    if (t) {
      if (current && current !== ev.target) current.tabIndex = -1;
      current = ev.target;
      current.tabIndex = 0;
      onSelect(t);
    }
  });
  el.addEventListener('keydown', (ev) => {
    const cell = ev.target.closest('.cell');
    if (!cell || !cell.dataset.sup) return;
    const all = [...el.querySelectorAll('.cells')].flatMap(visible);
    const row = visible(cell.parentElement);
    const cols = Math.max(1, row.filter((c) => c.offsetTop === row[0].offsetTop).length);
    const i = all.indexOf(cell);
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols, Home: -i, End: all.length - 1 - i };
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    focus(all[Math.min(all.length - 1, Math.max(0, i + moves[ev.key]))]);
  });

  function build(r) {
    cells.clear();
    current = null;
    el.replaceChildren(...(r.waves || []).map((w, i) => h('section', { class: 'wave', 'data-wave': String(i + 1), 'aria-labelledby': `wave-${i + 1}-h` },
      h('h3', { id: `wave-${i + 1}-h` }),
      h('div', { class: 'cells', role: 'group', 'aria-label': `Targets of wave ${i + 1}, ${w.name}` }))));
    const grids = [...el.querySelectorAll('.cells')];
    for (const t of r.targets || []) {
      const grid = grids[t.wave - 1];
      if (!grid) continue;
      const cell = h('button', { type: 'button', tabindex: '-1', 'data-sup': t.supervisor });
      cells.set(t.supervisor, cell);
      grid.append(cell);
    }
    current = el.querySelector('button[data-sup]');
    if (current) current.tabIndex = 0;
  }

  function update(r) {
    const targets = r.targets || [];
    const now = `${(r.waves || []).length}/${targets.map((t) => `${t.supervisor}@${t.wave}`).join(',')}`;
    if (now !== shape) { shape = now; build(r); }
    bySup = new Map(targets.map((t) => [t.supervisor, t]));
    for (const t of targets) { const c = cells.get(t.supervisor); if (c) paint(c, t); }
    (r.waves || []).forEach((w, i) => {
      const head = el.querySelector(`#wave-${i + 1}-h`);
      const n = counts(targets.filter((t) => t.wave === i + 1));
      head.replaceChildren(`Wave ${i + 1}: ${w.name} `, badge(w.state),
        h('span', { class: 'muted' }, ` ${w.targets} targets: ${tally(n)}`));
    });
    if (current && bySup.has(current.dataset.sup) && el.contains(document.activeElement)) onSelect(bySup.get(current.dataset.sup));
  }

  // filter hides the cells not in state (all when empty) or whose
  // Supervisor and region do not contain text; it returns how many show.
  function filter(state, text) {
    const q = (text || '').trim().toLowerCase();
    let shown = 0;
    for (const [sup, cell] of cells) {
      const t = bySup.get(sup);
      const ok = !!t && (!state || t.state === state) && (!q || sup.toLowerCase().includes(q) || (t.region || '').toLowerCase().includes(q));
      cell.hidden = !ok;
      if (ok) shown++;
    }
    if (current && current.hidden) {
      current.tabIndex = -1;
      current = [...cells.values()].find((c) => !c.hidden) || null;
      if (current) current.tabIndex = 0;
    }
    return shown;
  }

  return { el, update, filter };
}
