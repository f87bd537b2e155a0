import { describe, expect, it } from 'vitest';
import {
  filtersOf,
  inputFromIso,
  instant,
  isoFromInput,
  messageHref,
  messagesHref,
  messagesQuery,
  pretty,
  preview,
  timeline,
} from '../../src/messages.js';
import { parse } from '../../src/route.js';
import { byNameQuery, namesQuery, pageCount } from '../../src/traces.js';

describe('message filters', () => {
  it('reads the URL, dropping what the listing cannot take', () => {
    expect(
      filtersOf({
        queue: ' orders ',
        partition: 'p1',
        status: 'bogus',
        from: 'yesterday',
        to: '2026-01-02T03:04:00Z',
        page: '0',
      }),
    ).toEqual({
      queue: 'orders',
      partition: 'p1',
      status: '',
      from: '',
      to: '2026-01-02T03:04:00.000Z',
      page: 1,
    });
    expect(filtersOf({ status: 'dead_letter', page: '3' })).toMatchObject({
      status: 'dead_letter',
      page: 3,
    });
  });

  it('asks for a page and one row more, sending only the filters set', () => {
    expect(messagesQuery(filtersOf({}), 50)).toBe('/api/v1/messages?limit=51&offset=0');
    expect(
      messagesQuery(
        filtersOf({ queue: 'a b', partition: 'p/1', status: 'pending', page: '3' }),
        50,
      ),
    ).toBe('/api/v1/messages?queue=a+b&partition=p%2F1&status=pending&limit=51&offset=100');
    expect(
      messagesQuery(filtersOf({ from: '2026-01-01T00:00Z', to: '2026-01-01T01:00Z' }), 10),
    ).toBe(
      '/api/v1/messages?from=2026-01-01T00%3A00%3A00.000Z&to=2026-01-01T01%3A00%3A00.000Z&limit=11&offset=0',
    );
  });

  it('writes the filters into the hash and reads them back the same', () => {
    const f = filtersOf({ queue: 'q', status: 'completed', from: '2026-01-01T00:00Z', page: '2' });
    const h = messagesHref(f);
    expect(h).toBe('#/messages?queue=q&status=completed&from=2026-01-01T00%3A00%3A00.000Z&page=2');
    expect(filtersOf(parse(h).query)).toEqual(f);
    expect(messagesHref({ page: 1 })).toBe('#/messages');
  });

  it('names a message by partition id and transaction id', () => {
    expect(messageHref('p-id', 'tx:retry:1')).toBe('#/message?partition=p-id&tx=tx%3Aretry%3A1');
    expect(parse(messageHref('p-id', 'a&b=c')).query).toEqual({ partition: 'p-id', tx: 'a&b=c' });
  });

  it('reads datetime-local inputs as UTC, whatever the browser zone', () => {
    expect(isoFromInput('2026-03-04T05:06')).toBe('2026-03-04T05:06:00.000Z');
    expect(isoFromInput('')).toBe('');
    expect(isoFromInput('nonsense')).toBe('');
    expect(inputFromIso('2026-03-04T05:06:59.999Z')).toBe('2026-03-04T05:06');
    expect(inputFromIso('')).toBe('');
    expect(inputFromIso(isoFromInput('2026-12-31T23:59'))).toBe('2026-12-31T23:59');
  });

  it('says instants in UTC, to the second or the millisecond', () => {
    expect(instant('2026-01-02T03:04:05.678Z')).toBe('2026-01-02 03:04:05');
    expect(instant('2026-01-02T03:04:05.678Z', { ms: true })).toBe('2026-01-02 03:04:05.678');
    expect(instant(null)).toBe('—');
  });
});

describe('payloads', () => {
  it('previews on one line, cut with an ellipsis', () => {
    expect(preview({ a: 1, b: [1, 2] })).toBe('{"a":1,"b":[1,2]}');
    expect(preview('text')).toBe('"text"');
    expect(preview(null)).toBe('null');
    expect(preview(undefined)).toBe('');
    const long = preview({ s: 'x'.repeat(100) }, 20);
    expect(long).toHaveLength(20);
    expect(long.endsWith('…')).toBe(true);
  });

  it('prints in full as JSON that parses back to the payload', () => {
    for (const p of [{ a: { b: [1, 'two', null] } }, 'a string', 42, null, [1, 2], true])
      expect(JSON.parse(pretty(p))).toEqual(p);
    expect(pretty({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(pretty(undefined)).toBe('null');
  });
});

describe('trace timeline', () => {
  it('orders events oldest first, keeping the broker order for ties', () => {
    const t = (id, at) => ({ id, created_at: at });
    expect(
      timeline([
        t('c', '2026-01-01T00:00:02Z'),
        t('a', '2026-01-01T00:00:01Z'),
        t('b', '2026-01-01T00:00:01Z'),
      ]).map((e) => e.id),
    ).toEqual(['a', 'b', 'c']);
    expect(timeline(undefined)).toEqual([]);
  });
});

describe('trace paging', () => {
  it('pages names and a name by limit and offset', () => {
    expect(namesQuery(1, 50)).toBe('/api/v1/traces/names?limit=50&offset=0');
    expect(namesQuery('3', 50)).toBe('/api/v1/traces/names?limit=50&offset=100');
    expect(byNameQuery('order flow/1', 2, 10)).toBe(
      '/api/v1/traces/by-name/order%20flow%2F1?limit=10&offset=10',
    );
  });

  it('counts pages from the total, one at least', () => {
    expect(pageCount(0, 50)).toBe(1);
    expect(pageCount(50, 50)).toBe(1);
    expect(pageCount(51, 50)).toBe(2);
    expect(pageCount(undefined, 50)).toBe(1);
  });
});
