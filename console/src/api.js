// The console's only way to the broker: its public HTTP API, so everything the console
// shows can be scripted too. With authentication on, the token the user gave is sent as a
// bearer on every call; it lives in sessionStorage, so it goes with the tab.

const TOKEN_KEY = 'regent.token';

/** A failed call: `status` 0 when the broker could not be reached at all. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function storage() {
  return globalThis.sessionStorage;
}

export function getToken(store = storage()) {
  return store?.getItem(TOKEN_KEY) || null;
}

export function setToken(token, store = storage()) {
  const t = token.trim();
  if (t) store?.setItem(TOKEN_KEY, t);
  else store?.removeItem(TOKEN_KEY);
}

/**
 * GET (or `method`, with `body` sent as JSON) a path of the API and answer its JSON, or
 * throw an ApiError.
 */
export async function api(
  path,
  { method = 'GET', body, token = getToken(), fetch = globalThis.fetch } = {},
) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'The broker cannot be reached');
  }
  let answer = null;
  try {
    answer = await res.json();
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  if (!res.ok)
    throw new ApiError(res.status, answer?.error || res.statusText || `HTTP ${res.status}`);
  return answer;
}

/** What an error means to the user: a title and whether a (new) token could help. */
export function explain(err) {
  const s = err?.status;
  if (s === 401) return { title: 'Authentication required', detail: err.message, token: true };
  if (s === 403) return { title: 'Not allowed with this token', detail: err.message, token: true };
  if (s === 0) return { title: 'Broker unreachable', detail: err.message, token: false };
  if (s === 429) return { title: 'Rate limited', detail: err.message, token: false };
  return { title: s ? `Error ${s}` : 'Error', detail: err?.message || String(err), token: false };
}
