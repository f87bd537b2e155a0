import { describe, expect, it } from 'vitest';
import { ApiError, api, explain, getToken, setToken } from '../../src/api.js';

function memory() {
  const m = new Map();
  return {
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => m.set(k, v),
    removeItem: (k) => m.delete(k),
  };
}

function answering(status, body) {
  const calls = [];
  const fetch = async (path, init) => {
    calls.push({ path, init });
    return { ok: status < 400, status, statusText: '', json: async () => body };
  };
  return { fetch, calls };
}

describe('api', () => {
  it('sends the token as a bearer and answers the JSON', async () => {
    const f = answering(200, { queues: 3 });
    const v = await api('/api/v1/resources/overview', { token: 'abc', fetch: f.fetch });
    expect(v).toEqual({ queues: 3 });
    expect(f.calls[0].init.headers.Authorization).toBe('Bearer abc');
  });

  it('sends a body as JSON with its content type', async () => {
    const f = answering(200, { success: true });
    await api('/api/v1/dlq/requeue', { method: 'POST', body: { all: true }, fetch: f.fetch });
    expect(f.calls[0].init.method).toBe('POST');
    expect(f.calls[0].init.headers['Content-Type']).toBe('application/json');
    expect(JSON.parse(f.calls[0].init.body)).toEqual({ all: true });
  });

  it('sends no authorization header without a token', async () => {
    const f = answering(200, {});
    await api('/x', { token: null, fetch: f.fetch });
    expect(f.calls[0].init.headers.Authorization).toBeUndefined();
  });

  it("throws the broker's error text with its status", async () => {
    const f = answering(403, { error: 'Insufficient permissions' });
    const e = await api('/x', { token: 't', fetch: f.fetch }).catch((e) => e);
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.message]).toEqual([403, 'Insufficient permissions']);
  });

  it('says when the broker cannot be reached', async () => {
    const fetch = async () => {
      throw new TypeError('Failed to fetch');
    };
    const e = await api('/x', { token: null, fetch }).catch((e) => e);
    expect(e.status).toBe(0);
  });

  it('keeps the token trimmed, and forgets it when given an empty one', () => {
    const s = memory();
    setToken('  tok  ', s);
    expect(getToken(s)).toBe('tok');
    setToken('', s);
    expect(getToken(s)).toBeNull();
  });
});

describe('explain', () => {
  it('offers the token form for 401 and 403 only', () => {
    expect(explain(new ApiError(401, 'Authentication required')).token).toBe(true);
    expect(explain(new ApiError(403, 'Insufficient permissions')).token).toBe(true);
    expect(explain(new ApiError(500, 'Internal server error')).token).toBe(false);
    expect(explain(new ApiError(0, 'x')).title).toBe('Broker unreachable');
  });
});
