import { describe, expect, it } from 'vitest';
import { parse } from '../../src/route.js';
import {
  filterQueries,
  keyParts,
  MAX_STATE_LIMIT,
  moreLimit,
  partitionsQuery,
  partPrefixes,
  prefixOf,
  queryHref,
  SEP,
  shownKey,
  slicePage,
  stateBody,
  stateHref,
  stateLimit,
  stateRows,
  tagPrefixes,
} from '../../src/streams.js';

// A key as the SDK writes it: operator tag, user key, window start.
const KEY = 'agg\u001fuser-1\u001f2026-01-01T00:00:00.000Z';

describe('state keys', () => {
  it('splits a key into its parts at the unit separator', () => {
    expect(SEP).toBe('\u001f');
    expect(keyParts(KEY)).toEqual(['agg', 'user-1', '2026-01-01T00:00:00.000Z']);
    expect(keyParts('plain')).toEqual(['plain']);
    expect(keyParts(undefined)).toEqual(['']);
  });

  it('shows the separator as a middle dot between spaces, and reads it back', () => {
    expect(shownKey(KEY)).toBe('agg · user-1 · 2026-01-01T00:00:00.000Z');
    expect(prefixOf(shownKey(KEY))).toBe(KEY);
    expect(prefixOf('agg · ')).toBe('agg\u001f');
    // Still typing: the space after the dot is not there yet.
    expect(prefixOf('agg ·')).toBe('agg\u001f');
    expect(prefixOf('agg ·user')).toBe('agg ·user');
    // A middle dot without its spaces is a character of the key.
    expect(prefixOf('a·b')).toBe('a·b');
    expect(prefixOf('agg␟user')).toBe('agg\u001fuser');
    expect(prefixOf('agg\\u001Fuser')).toBe('agg\u001fuser');
    expect(prefixOf('agg\\x1fuser')).toBe('agg\u001fuser');
    expect(prefixOf('')).toBe('');
    expect(prefixOf(undefined)).toBe('');
  });

  it('offers each part but the last as a prefix', () => {
    expect(partPrefixes(KEY)).toEqual(['agg\u001f', 'agg\u001fuser-1\u001f']);
    expect(partPrefixes('plain')).toEqual([]);
  });

  it('collects the operator tags seen, as prefixes, sorted, without repeats', () => {
    const rows = [
      { key: KEY },
      { key: 'agg\u001fuser-2\u001fw' },
      { key: 'dedupe\u001fx' },
      { key: 'no-tag' },
      { key: '\u001fempty-tag' },
    ];
    expect(tagPrefixes(rows)).toEqual(['agg\u001f', 'dedupe\u001f']);
    expect(tagPrefixes([{ key: 'b\u001f1' }], ['agg\u001f'])).toEqual(['agg\u001f', 'b\u001f']);
    expect(tagPrefixes(undefined)).toEqual([]);
  });
});

describe('the state read', () => {
  it('asks for one row more than it shows, with the prefix when there is one', () => {
    expect(stateBody({ queryId: 'q', partitionId: 'p', prefix: '', limit: undefined })).toEqual({
      query_id: 'q',
      partition_id: 'p',
      keys: [],
      limit: 101,
    });
    expect(
      stateBody({ queryId: 'q', partitionId: 'p', prefix: 'agg\u001f', limit: '1000' }),
    ).toEqual({ query_id: 'q', partition_id: 'p', keys: [], key_prefix: 'agg\u001f', limit: 1001 });
  });

  it('never asks for more than the broker answers', () => {
    expect(stateBody({ queryId: 'q', partitionId: 'p', limit: 99999 }).limit).toBe(MAX_STATE_LIMIT);
    expect(stateLimit('0')).toBe(100);
    expect(stateLimit('x')).toBe(100);
    expect(stateLimit('250')).toBe(250);
    expect(stateLimit(20000)).toBe(MAX_STATE_LIMIT);
    expect(moreLimit(100)).toBe(1000);
    expect(moreLimit(1000)).toBe(MAX_STATE_LIMIT);
  });

  it('shows the rows asked for and says whether more match', () => {
    const rows = [1, 2, 3].map((i) => ({ key: `k${i}` }));
    expect(stateRows({ rows }, 2)).toEqual({ rows: rows.slice(0, 2), more: true });
    expect(stateRows({ rows }, 3)).toEqual({ rows, more: false });
    expect(stateRows(null, 3)).toEqual({ rows: [], more: false });
  });
});

describe('the query list and pages', () => {
  const queries = [
    { name: 'orders.per-minute', source_queue: 'orders', sink_queue: 'totals' },
    { name: 'clicks', source_queue: 'web', sink_queue: null },
  ];

  it('filters by a part of the name, source or sink, any case', () => {
    expect(filterQueries(queries, '')).toBe(queries);
    expect(filterQueries(queries, 'PER-').map((q) => q.name)).toEqual(['orders.per-minute']);
    expect(filterQueries(queries, 'web').map((q) => q.name)).toEqual(['clicks']);
    expect(filterQueries(queries, 'total').map((q) => q.name)).toEqual(['orders.per-minute']);
    expect(filterQueries(queries, 'none')).toEqual([]);
  });

  it('pages a list held whole', () => {
    const rows = Array.from({ length: 5 }, (_, i) => i);
    expect(slicePage(rows, 1, 2)).toEqual({ rows: [0, 1], page: 1, pages: 3 });
    expect(slicePage(rows, '3', 2)).toEqual({ rows: [4], page: 3, pages: 3 });
    expect(slicePage(rows, 'x', 2).page).toBe(1);
    expect(slicePage([], 1, 2)).toEqual({ rows: [], page: 1, pages: 1 });
  });

  it("pages a query's partitions by the broker", () => {
    expect(partitionsQuery('0190-a', 1)).toBe(
      '/streams/v1/queries/0190-a/partitions?limit=50&offset=0',
    );
    expect(partitionsQuery('a/b', '3', 10)).toBe(
      '/streams/v1/queries/a%2Fb/partitions?limit=10&offset=20',
    );
  });
});

describe('the routes', () => {
  it("names a query's page", () => {
    expect(queryHref('q1')).toBe('#/stream?id=q1');
    expect(queryHref('q1', 2)).toBe('#/stream?id=q1&page=2');
  });

  it('keeps a prefix with its separators through the URL', () => {
    const h = stateHref('q1', 'p1', { name: 'p0', prefix: 'agg\u001fuser-1\u001f', limit: 1000 });
    expect(h).toBe('#/stream-state?id=q1&partition=p1&name=p0&prefix=agg%1Fuser-1%1F&limit=1000');
    expect(parse(h).query).toEqual({
      id: 'q1',
      partition: 'p1',
      name: 'p0',
      prefix: 'agg\u001fuser-1\u001f',
      limit: '1000',
    });
    expect(stateHref('q1', 'p1', { prefix: '', limit: 100 })).toBe(
      '#/stream-state?id=q1&partition=p1',
    );
  });
});
