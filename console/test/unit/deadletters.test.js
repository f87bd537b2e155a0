import { describe, expect, it } from 'vitest';
import {
  describeFilter,
  failedAt,
  filterBody,
  idsBody,
  listPath,
  pageNumber,
  pageState,
  preview,
  prune,
  readFilter,
  selectPage,
  toggle,
  verdicts,
  verdictText,
} from '../../src/deadletters.js';

describe('the filter', () => {
  it('keeps only the filter keys set, exactly as given', () => {
    expect(readFilter({ queue: 'a', reason: ' x ', page: '2', search: 'q', group: '' })).toEqual({
      queue: 'a',
      reason: ' x ',
    });
    expect(readFilter(undefined)).toEqual({});
    expect(pageNumber({ page: '3' })).toBe(3);
    expect(pageNumber({ page: '-1' })).toBe(1);
    expect(pageNumber({})).toBe(1);
  });

  it('asks the broker for a page with its names, the reason too', () => {
    const path = listPath(
      {
        queue: 'a b',
        group: 'g',
        partition: 'p',
        reason: 'boom',
        from: '2026-01-01T00:00:00.000Z',
        to: '2026-01-02T00:00:00.000Z',
      },
      3,
    );
    const [route, qs] = path.split('?');
    expect(route).toBe('/api/v1/dlq');
    expect(Object.fromEntries(new URLSearchParams(qs))).toEqual({
      queue: 'a b',
      consumerGroup: 'g',
      partition: 'p',
      reason: 'boom',
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-01-02T00:00:00.000Z',
      limit: '50',
      offset: '100',
    });
    expect(listPath({}, 1)).toBe('/api/v1/dlq?limit=50&offset=0');
  });

  it('turns into the bulk body, the broker names and never an empty selector', () => {
    expect(filterBody({ queue: 'a', group: 'g', reason: 'r' }, true)).toEqual({
      queue: 'a',
      consumerGroup: 'g',
      reason: 'r',
      dryRun: true,
    });
    expect(filterBody({ partition: 'p', from: 'F', to: 'T' })).toEqual({
      partition: 'p',
      from: 'F',
      to: 'T',
    });
    // No filter is every dead letter, which the broker only does when told so.
    expect(filterBody({})).toEqual({ all: true });
    expect(filterBody({}, true)).toEqual({ all: true, dryRun: true });
    expect(idsBody(new Set([3, 1]))).toEqual({ ids: [3, 1] });
  });

  it('is said in words for the question', () => {
    expect(describeFilter({})).toBe(null);
    expect(describeFilter({ queue: 'a', reason: 'boom' })).toBe('queue “a”, reason “boom”');
  });
});

describe('the selection', () => {
  it('toggles one row without touching the Set it came from', () => {
    const a = new Set([1]);
    const b = toggle(a, 2);
    expect([...b]).toEqual([1, 2]);
    expect([...a]).toEqual([1]);
    expect([...toggle(b, 1)]).toEqual([2]);
  });

  it('says whether the page is all, some or none selected', () => {
    expect(pageState(new Set(), [1, 2])).toBe('none');
    expect(pageState(new Set([1]), [1, 2])).toBe('some');
    expect(pageState(new Set([1, 2]), [1, 2])).toBe('all');
    expect(pageState(new Set([9]), [1, 2])).toBe('none');
    expect(pageState(new Set(), [])).toBe('none');
  });

  it('selects the whole page or clears it', () => {
    expect([...selectPage([1, 2, 3], true)]).toEqual([1, 2, 3]);
    expect([...selectPage([1, 2, 3], false)]).toEqual([]);
  });

  it('keeps only rows still shown, and the same Set when nothing goes', () => {
    const s = new Set([1, 2, 3]);
    expect([...prune(s, [2, 3, 4])]).toEqual([2, 3]);
    expect(prune(s, [1, 2, 3, 4])).toBe(s);
  });
});

describe('an answer', () => {
  it('counts the verdicts item by item', () => {
    const answer = {
      more: true,
      items: [
        { verdict: 'requeued' },
        { verdict: 'requeued' },
        { verdict: 'duplicate' },
        { verdict: 'gone' },
      ],
    };
    expect(verdicts(answer)).toEqual({
      requeued: 2,
      duplicate: 1,
      gone: 1,
      deleted: 0,
      more: true,
    });
    expect(verdictText(answer)).toMatch(/^2 requeued, 1 duplicate .*1 gone .*More dead letters/);
  });

  it('says when nothing matched', () => {
    expect(verdictText({ items: [], more: false })).toBe('Nothing matched.');
    expect(verdictText({ items: [{ verdict: 'deleted' }] })).toBe('1 deleted.');
  });
});

describe('a payload', () => {
  it('is one short line', () => {
    expect(preview({ a: 1 })).toBe('{"a":1}');
    expect(preview('x'.repeat(100), 10)).toBe('"xxxxxxxx…');
    expect(preview(undefined)).toBe('undefined');
  });
});

describe('a failure time', () => {
  it('is said to the second, in UTC', () => {
    expect(failedAt('2026-12-02T01:23:45.678Z')).toBe('2026-12-02 01:23:45');
    expect(failedAt(null)).toBe('—');
  });
});
