import { describe, expect, it } from 'vitest';
import { listingQuery, pageOf } from '../../src/paging.js';
import { href, parse } from '../../src/route.js';
import { throughputColumns } from '../../src/series.js';

describe('paging', () => {
  it('asks for one row more than a page, from the page offset', () => {
    expect(listingQuery(1, '', 50)).toBe('/api/v1/resources/queues?limit=51&offset=0');
    expect(listingQuery('3', 'ord er', 50)).toBe(
      '/api/v1/resources/queues?limit=51&offset=100&search=ord+er',
    );
    expect(listingQuery('nonsense', '', 10)).toContain('offset=0');
  });

  it('shows a page and knows whether another follows', () => {
    expect(pageOf([1, 2, 3], 2)).toEqual({ rows: [1, 2], more: true });
    expect(pageOf([1, 2], 2)).toEqual({ rows: [1, 2], more: false });
  });
});

describe('routes', () => {
  it('reads a hash into a path and a query, and writes it back', () => {
    expect(parse('')).toEqual({ path: '/', query: {} });
    expect(parse('#/queues?search=a&page=2')).toEqual({
      path: '/queues',
      query: { search: 'a', page: '2' },
    });
    expect(href('/queues', { search: 'a b', page: undefined })).toBe('#/queues?search=a+b');
    expect(href('/')).toBe('#/');
  });
});

describe('series', () => {
  it('fills the window bucket by bucket, oldest first, in seconds', () => {
    const cols = throughputColumns({
      bucketMinutes: 1,
      timeRange: { from: '2026-01-01T00:00:00.500Z', to: '2026-01-01T00:04:00.500Z' },
      throughput: [
        { timestamp: '2026-01-01T00:02:00.500Z', ingestedPerSecond: 2, processedPerSecond: 1 },
        { timestamp: '2026-01-01T00:00:00.500Z', ingestedPerSecond: 4, processedPerSecond: 3 },
      ],
    });
    const t0 = Date.parse('2026-01-01T00:00:00.500Z') / 1000;
    expect(cols).toEqual([
      [t0, t0 + 60, t0 + 120, t0 + 180],
      [4, 0, 2, 0],
      [3, 0, 1, 0],
    ]);
  });

  it('draws nothing without an answer', () => {
    expect(throughputColumns(undefined)).toEqual([[], [], []]);
  });
});
