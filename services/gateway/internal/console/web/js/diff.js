// A line diff of two YAML documents (longest common subsequence), for the
// upgrade plan's reconfigured resources. Resources are small; documents
// over MAX lines are shown side by side instead.
import { h } from './dom.js';

const MAX = 2000;

export function lineDiff(before, after) {
  const a = (before || '').split('\n');
  const b = (after || '').split('\n');
  if (a.length > MAX || b.length > MAX) {
    return h('div', {}, h('h4', {}, 'Now'), h('pre', {}, before), h('h4', {}, 'Planned'), h('pre', {}, after));
  }
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { lines.push(h('span', {}, `  ${a[i]}`)); i++; j++; }
    else if (j < b.length && (i >= a.length || lcs[i][j + 1] >= lcs[i + 1][j])) { lines.push(h('span', { class: 'ins' }, `+ ${b[j]}`)); j++; }
    else { lines.push(h('span', { class: 'del' }, `- ${a[i]}`)); i++; }
  }
  return h('pre', { class: 'diff mono', 'aria-label': 'Lines removed start with -, lines added with +' }, lines);
}
