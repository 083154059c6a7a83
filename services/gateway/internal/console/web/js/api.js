// The console's REST client: the same /v2 calls, with the token kept in
// this tab's session storage and sent as the Bearer header. Nothing is
// kept once the tab closes, and no cookie carries the token, so no other
// site can make the browser call the API on the user's behalf.

const TOKEN = 'vcfsm.token';
const IDENTITY = 'vcfsm.identity';

export const session = {
  token: () => sessionStorage.getItem(TOKEN) || '',
  identity: () => {
    try { return JSON.parse(sessionStorage.getItem(IDENTITY) || 'null'); } catch { return null; }
  },
  save(token, identity) {
    sessionStorage.setItem(TOKEN, token);
    sessionStorage.setItem(IDENTITY, JSON.stringify(identity));
  },
  clear() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(IDENTITY);
  },
  // can tells whether the signed-in role holds a permission
  // (services.write, inventory.write); the server decides every call.
  can(permission) {
    const id = this.identity();
    return !!id && (id.permissions || []).includes(permission);
  },
};

const reasons = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 412: 'Precondition Failed', 413: 'Payload Too Large', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

// ApiError is a refused or failed call: the HTTP status and the server's
// message, shown as they are.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }

  get title() {
    return this.status ? `${this.status} ${reasons[this.status] || ''}`.trim() : 'Network error';
  }
}

let onUnauthorized = () => {};
// whenUnauthorized sets what a 401 does (back to sign-in).
export function whenUnauthorized(fn) { onUnauthorized = fn; }

function headers(token, json) {
  const h = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

async function failure(resp) {
  const text = await resp.text();
  let msg = text.trim();
  try { msg = JSON.parse(text).message || msg; } catch { /* not JSON: shown as it is */ }
  return new ApiError(resp.status, msg || resp.statusText);
}

// call makes one REST call and returns the decoded JSON (or the text of a
// YAML answer). token overrides the session's (sign-in).
export async function call(method, path, body, token) {
  let resp;
  try {
    resp = await fetch(path, {
      method, headers: headers(token || session.token(), body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, `the gateway could not be reached (${e.message})`);
  }
  if (!resp.ok) {
    const err = await failure(resp);
    if (resp.status === 401 && !token) onUnauthorized(err);
    throw err;
  }
  const type = resp.headers.get('Content-Type') || '';
  return type.includes('json') ? resp.json() : resp.text();
}

// stream reads a newline-delimited JSON stream (a REST watch) and calls
// onLine with each decoded line until it ends or signal aborts. It
// resolves when the stream ends.
export async function stream(path, onLine, signal) {
  let resp;
  try {
    resp = await fetch(path, { headers: headers(session.token(), false), signal, cache: 'no-store' });
  } catch (e) {
    if (signal && signal.aborted) return;
    throw new ApiError(0, `the watch stream could not be opened (${e.message})`);
  }
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) onLine(JSON.parse(line));
      }
    }
  } catch (e) {
    if (signal && signal.aborted) return;
    throw new ApiError(0, `the watch stream broke off (${e.message})`);
  }
}

// servicePath is the REST path of a service.
export function servicePath(id, rest) {
  return `/v2/vcf-services/${encodeURIComponent(id)}${rest || ''}`;
}

// packageMetadata is the PackageMetadata's spec (display name, provider,
// descriptions) of a service read with ?metadata=true.
export function packageMetadata(svc) {
  const md = svc.metadata || {};
  return md.spec || md;
}
