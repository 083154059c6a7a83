// Create: a bundle source, then the download followed live until the
// service is Unresolved, then on to activation.
import { h, alert } from '../dom.js';
import { call, servicePath } from '../api.js';
import { watchService, progressView } from '../live.js';

export async function createPage(ctx) {
  ctx.main.append(h('h1', {}, 'Create a service'));
  if (!ctx.session.can('services.write')) {
    ctx.main.append(h('p', {}, `Your role (${ctx.session.identity().role}) may not create services.`));
    return;
  }
  const source = h('input', { type: 'text', id: 'source', name: 'source', required: true, spellcheck: 'false', placeholder: 'oci://registry.example.com/vendor/bundle:1.0.0 or https://depot.example.com/service-1.0.0.tar', 'aria-describedby': 'source-help' });
  const out = h('div', { id: 'create-progress', 'aria-live': 'polite' });
  const form = h('form', { class: 'panel', 'aria-labelledby': 'create-step' },
    h('h2', { id: 'create-step' }, 'Step 1 of 2: the bundle'),
    h('div', { class: 'field grow' }, h('label', { for: 'source' }, 'Bundle source'), source),
    h('p', { id: 'source-help', class: 'muted' }, 'An imgpkg bundle image (oci://…) or bundle tarball (https://….tar). The service is created inactive; activation is the next step.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'create' }, 'Create')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    form.querySelector('button').disabled = true;
    try {
      const svc = await call('POST', '/v2/vcf-services', { source: source.value.trim() });
      out.replaceChildren(alert('info', 'Created.', `${svc.name || svc.id}: downloading and checking the bundle…`), progressView(svc));
      await watchService(svc.id, ctx.signal, (e) => {
        out.lastChild.replaceWith(progressView(e));
        if (e.status === 'Busy') return;
        const page = `#/services/${encodeURIComponent(svc.id)}`;
        ctx.navigate(e.status === 'Unresolved' ? `${page}/activate` : page);
      });
    } catch (err) {
      form.querySelector('button').disabled = false;
      ctx.showError(err);
    }
  });
  ctx.main.append(form, out);
  source.focus();
}
