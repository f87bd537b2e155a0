import { describe, expect, it } from 'vitest';
import { parse } from '../../src/route.js';
import {
  cancelPath,
  cancelVerdict,
  decodePayload,
  fromNow,
  listPath,
  peekState,
  queuesOf,
  readTimers,
  TIMERS_PAGE,
  timerPath,
  timersHref,
  timersPage,
} from '../../src/timers.js';

const ROW = {
  queue: 'orders',
  timerKey: 'order/1',
  txn: 't-1',
  messageId: '0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d',
  partition: 'Default',
  deliverAt: '2026-01-01T01:00:00.000Z',
  attempts: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};

/** The base64 of a text's UTF-8 bytes, as the broker encodes a payload. */
function b64(text) {
  return Buffer.from(text, 'utf8').toString('base64');
}

describe('the timers route', () => {
  it('reads the queue and position', () => {
    expect(readTimers({ queue: 'orders', after: 'order/9' })).toEqual({
      queue: 'orders',
      after: 'order/9',
    });
    expect(readTimers({})).toEqual({ queue: '', after: '' });
    expect(readTimers()).toEqual({ queue: '', after: '' });
  });

  it('links the queues, a queue and a page after a key, and parses back to them', () => {
    expect(timersHref()).toBe('#/timers');
    expect(timersHref({ queue: 'orders' })).toBe('#/timers?queue=orders');
    // A position means nothing without its queue.
    expect(timersHref({ after: 'x' })).toBe('#/timers');
    const to = timersHref({ queue: 'a b&c', after: 'order/1?x=#2' });
    expect(parse(to)).toEqual({
      path: '/timers',
      query: { queue: 'a b&c', after: 'order/1?x=#2' },
    });
  });
});

describe('the paths asked', () => {
  it('pages a queue by key, after a key when one is given', () => {
    expect(listPath({ queue: 'orders', after: '' })).toBe('/api/v1/timers/orders?limit=100');
    expect(listPath({ queue: 'a b', after: 'order/1 x' }, 5)).toBe(
      '/api/v1/timers/a%20b?after=order%2F1+x&limit=5',
    );
    expect(TIMERS_PAGE).toBe(100);
  });

  it('sends a key whole as one segment, so no part of it is read as the path', () => {
    expect(timerPath('orders', 'order/1')).toBe('/api/v1/timers/orders/order%2F1');
    expect(timerPath('orders', 'a/../b')).toBe('/api/v1/timers/orders/a%2F..%2Fb');
    expect(timerPath('orders', 'x?y#z%')).toBe('/api/v1/timers/orders/x%3Fy%23z%25');
  });

  it('cancels only the timer under the txn shown', () => {
    expect(cancelPath({ queue: 'orders', key: 'order/1', txn: 't 1&x' })).toBe(
      '/api/v1/timers/orders/order%2F1?txn=t%201%26x',
    );
    expect(cancelPath({ queue: 'orders', key: 'k' })).toBe('/api/v1/timers/orders/k');
  });
});

describe('the answers', () => {
  it('lists the queues', () => {
    const q = { queue: 'orders', pending: 3, nextDeliverAt: ROW.deliverAt };
    expect(queuesOf({ queues: [q] })).toEqual([q]);
    expect(queuesOf(null)).toEqual([]);
    expect(queuesOf({})).toEqual([]);
  });

  it('answers the rows, and where the next page starts only when there is one', () => {
    expect(timersPage({ rows: [ROW], truncated: true, nextAfter: 'order/1' })).toEqual({
      rows: [ROW],
      nextAfter: 'order/1',
    });
    expect(timersPage({ rows: [ROW], truncated: false, nextAfter: 'order/1' })).toEqual({
      rows: [ROW],
      nextAfter: null,
    });
    expect(timersPage({ rows: [], truncated: false, nextAfter: null })).toEqual({
      rows: [],
      nextAfter: null,
    });
    expect(timersPage(null)).toEqual({ rows: [], nextAfter: null });
  });

  it('says how far away a deadline is', () => {
    const now = Date.parse('2026-01-01T00:00:00.000Z');
    expect(fromNow('2026-01-01T01:00:00.000Z', now)).toBe('in 1 h');
    expect(fromNow('2026-01-01T00:59:30.000Z', now)).toBe('in 59 min');
    expect(fromNow('2026-01-01T00:00:42.000Z', now)).toBe('in 42 s');
    expect(fromNow('2026-01-03T04:00:00.000Z', now)).toBe('in 2 d 4 h');
    expect(fromNow('2026-01-01T00:00:00.400Z', now)).toBe('due now');
    expect(fromNow('2025-12-31T23:59:55.000Z', now)).toBe('5 s overdue');
    expect(fromNow(null, now)).toBe('—');
    expect(fromNow('soon', now)).toBe('—');
  });
});

describe('the peek', () => {
  it('decodes the payload: the base64 of JSON text, non-ASCII included', () => {
    expect(decodePayload(b64('{"a":1,"b":[2]}'))).toEqual({ value: { a: 1, b: [2] } });
    expect(decodePayload(b64('"é ✓"'))).toEqual({ value: 'é ✓' });
    expect(decodePayload(b64('42'))).toEqual({ value: 42 });
    expect(decodePayload(b64('null'))).toEqual({ value: null });
  });

  it('says when the payload is not JSON, or not base64 of text', () => {
    expect(decodePayload(b64('{not json'))).toEqual({
      error: 'The payload is not a JSON document',
      text: '{not json',
    });
    expect(decodePayload('***').error).toBe('The payload is not base64 of UTF-8 text');
    expect(decodePayload(Buffer.from([0xff, 0xfe]).toString('base64')).error).toBe(
      'The payload is not base64 of UTF-8 text',
    );
    expect(decodePayload('').error).toBe('The payload is not a JSON document');
  });

  it('compares the timer peeked with the row it was asked for', () => {
    expect(peekState({ found: false }, ROW)).toBe('gone');
    expect(peekState(null, ROW)).toBe('gone');
    expect(peekState({ found: true, ...ROW }, ROW)).toBe('same');
    expect(peekState({ found: true, ...ROW, txn: 't-2' }, ROW)).toBe('rescheduled');
  });
});

describe('the cancel', () => {
  const result = (status, more = {}) => ({
    ok: status === 'cancelled',
    status,
    queue: 'orders',
    timerKey: 'order/1',
    txn: 't-1',
    messageId: null,
    deliverAt: null,
    ...more,
  });

  it('says what the broker did', () => {
    const done = cancelVerdict(result('cancelled', { messageId: ROW.messageId }), 'order/1');
    expect(done).toEqual({
      kind: 'cancelled',
      text: `Cancelled “order/1”: its message (${ROW.messageId}) will not be delivered.`,
    });
    const absent = cancelVerdict(result('absent'), 'order/1');
    expect(absent.kind).toBe('absent');
    expect(absent.text).toContain('already delivered, cancelled, or rescheduled');
    expect(absent.text).toContain('Nothing was cancelled');
    const late = cancelVerdict(result('too_late'), 'order/1');
    expect(late.kind).toBe('too_late');
    expect(late.text).toContain('firing now');
    expect(cancelVerdict(result('scheduled'), 'k')).toEqual({
      kind: 'other',
      text: '“k” was not cancelled (scheduled).',
    });
    expect(cancelVerdict(null, 'k').kind).toBe('other');
  });
});
