import { describe, expect, it } from 'vitest';
import {
  byQueue,
  cursorCount,
  cursorsPath,
  deletePath,
  groupLabel,
  groupsPath,
  seekBody,
  seekPartitionPath,
  seekQueuePath,
  stateClass,
} from '../../src/groups.js';

describe('the listing', () => {
  it('asks for one row more than a page', () => {
    expect(groupsPath(1)).toBe('/api/v1/consumer-groups?limit=51&offset=0');
    expect(groupsPath(3, {}, 10)).toBe('/api/v1/consumer-groups?limit=11&offset=20');
  });

  it('has the broker filter by queue and by a part of the name', () => {
    expect(groupsPath(2, { queue: 'a b&c', search: 'bill' })).toBe(
      '/api/v1/consumer-groups?queue=a+b%26c&search=bill&limit=51&offset=50',
    );
    // The empty queue name is a queue's name; an empty search is no search.
    expect(groupsPath(1, { queue: '', search: '' })).toBe(
      '/api/v1/consumer-groups?queue=&limit=51&offset=0',
    );
  });

  it('names queue mode and tones the state', () => {
    expect(groupLabel('__QUEUE_MODE__')).toBe('queue mode');
    expect(groupLabel('g')).toBe('g');
    expect(stateClass('Lagging')).toBe('badge badge-warn');
    expect(stateClass('Other')).toBe('badge');
  });
});

describe('the cursors', () => {
  it('are asked a page at a time, the name escaped', () => {
    expect(cursorsPath('a/b c', 2, 100)).toBe(
      '/api/v1/consumer-groups/a%2Fb%20c?limit=100&offset=100',
    );
  });

  it('are grouped by queue with their sums', () => {
    const answer = {
      orders: {
        partitions: [
          { partition: 'p0', offsetLag: 2, timeLagSeconds: 5, leaseActive: true },
          { partition: 'p1', offsetLag: 3, timeLagSeconds: 9, leaseActive: false },
        ],
      },
      audit: { partitions: [{ partition: 'p0', offsetLag: 0, timeLagSeconds: 0 }] },
    };
    const qs = byQueue(answer);
    expect(qs.map((q) => [q.queue, q.lag, q.maxTimeLag, q.leases])).toEqual([
      ['orders', 5, 9, 1],
      ['audit', 0, 0, 0],
    ]);
    expect(cursorCount(answer)).toBe(3);
    expect(byQueue({})).toEqual([]);
    expect(byQueue(null)).toEqual([]);
  });
});

describe('seek and delete', () => {
  it('name the group, queue and partition in escaped path segments', () => {
    expect(seekQueuePath('g 1', 'q/x')).toBe('/api/v1/consumer-groups/g%201/queues/q%2Fx/seek');
    expect(seekPartitionPath('g', 'q', 'p 0')).toBe(
      '/api/v1/consumer-groups/g/queues/q/partitions/p%200/seek',
    );
    expect(deletePath('g')).toBe('/api/v1/consumer-groups/g');
    expect(deletePath('g', 'q')).toBe('/api/v1/consumer-groups/g/queues/q');
  });

  it('send toEnd, or the local instant as ISO UTC, or nothing when it is not one', () => {
    expect(seekBody(true)).toEqual({ toEnd: true });
    const local = '2026-03-04T05:06:07';
    expect(seekBody(false, local)).toEqual({ timestamp: new Date(local).toISOString() });
    expect(seekBody(false, '')).toBe(null);
    expect(seekBody(false, 'nonsense')).toBe(null);
  });
});
