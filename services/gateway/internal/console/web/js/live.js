// One service's live view: its REST watch stream and the progress line
// every page that starts an operation shows.
import { h, badge } from './dom.js';
import { stream, servicePath } from './api.js';

// watchService follows a service's REST watch until signal aborts or the
// stream ends; onEvent gets each event.
export function watchService(id, signal, onEvent) {
  return stream(servicePath(id, '/watch'), (line) => {
    if (line.result) onEvent(line.result);
  }, signal);
}

// progressView shows where a service is: status, phase, lifecycle state,
// version and its operation's step (with a bar when it is measurable).
export function progressView(ev) {
  const op = ev.operation || {};
  const running = op.type && !op.outcome;
  return h('div', { class: 'progress', id: 'progress', 'data-status': ev.status, 'data-version': ev.version, 'data-outcome': op.outcome || '' },
    badge(ev.status), badge(ev.lifecycleState), ev.phase ? h('span', {}, ev.phase) : null,
    h('span', { class: 'mono' }, ev.version),
    op.type ? h('span', {}, `${op.type}: ${op.step || ''}${op.outcome ? ` — ${op.outcome}` : ''}`) : null,
    running && op.percent > 0 ? h('progress', { max: '100', value: String(op.percent), 'aria-label': `${op.step} progress` }) : null,
    op.message ? h('span', { class: 'muted' }, op.message) : null);
}
