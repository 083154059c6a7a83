// One service's live view: its REST watch stream, kept open while the
// page is shown, and the progress line every page that starts an
// operation shows.
import { h, badge } from './dom.js';
import { stream, servicePath } from './api.js';

const wait = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// keepFollowing runs open (one watch stream) again whenever the stream
// ends or breaks without being finished: the gateway closes a watch that
// was idle too long (--watch-idle-timeout) and restarts drop it. open
// resolves true when there is nothing more to follow. A refusal (4xx
// other than 429) is not retried. The first event of a reopened stream is
// the current state, so nothing is missed in between.
export async function keepFollowing(open, signal) {
  let delay = 500;
  while (!signal.aborted) {
    const started = Date.now();
    try {
      if (await open()) return;
    } catch (err) {
      if (signal.aborted) return;
      if (err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
    }
    if (Date.now() - started > 60000) delay = 500;
    await wait(delay, signal);
    delay = Math.min(delay * 2, 30000);
  }
}

// watchService follows a service's REST watch until signal aborts or the
// service is deleted; onEvent gets each event.
export function watchService(id, signal, onEvent) {
  let deleted = false;
  return keepFollowing(() => stream(servicePath(id, '/watch'), (line) => {
    if (!line.result) return;
    deleted = deleted || !!line.result.deleted;
    onEvent(line.result);
  }, signal).then(() => deleted), signal);
}

// progressView shows where a service is: status, phase, lifecycle state,
// version and its operation's step (with a bar when it is measurable).
export function progressView(ev) {
  const op = ev.operation || {};
  const running = op.type && !op.outcome;
  return h('div', { class: 'progress', id: 'progress', 'data-status': ev.status, 'data-lifecycle': ev.lifecycleState, 'data-version': ev.version, 'data-outcome': op.outcome || '' },
    badge(ev.status), badge(ev.lifecycleState), ev.phase ? h('span', {}, ev.phase) : null,
    h('span', { class: 'mono' }, ev.version),
    op.type ? h('span', {}, `${op.type}: ${op.step || ''}${op.outcome ? ` — ${op.outcome}` : ''}`) : null,
    running && op.percent > 0 ? h('progress', { max: '100', value: String(op.percent), 'aria-label': `${op.step} progress` }) : null,
    op.message ? h('span', { class: 'muted' }, op.message) : null);
}
