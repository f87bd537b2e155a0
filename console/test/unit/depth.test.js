import { describe, expect, it } from 'vitest';
import { derivable, derivedDepth, opsColumns } from '../../src/depth.js';

const from = '2026-01-01T00:00:00.000Z';
const t0 = Date.parse(from) / 1000;
const at = (min) => new Date((t0 + min * 60) * 1000).toISOString();

describe('queue series', () => {
  it('fills every bucket of the window, oldest first, and sums what expired', () => {
    const cols = opsColumns({
      bucketMinutes: 1,
      timeRange: { from, to: at(4) },
      series: [
        { timestamp: at(1), push: 5, ack: 0, expired: 0 },
        { timestamp: at(3), push: 1, ack: 4, expired: 2 },
      ],
    });
    expect(cols).toEqual({
      times: [t0, t0 + 60, t0 + 120, t0 + 180],
      pushed: [0, 5, 0, 1],
      processed: [0, 0, 0, 4],
      expired: 2,
      width: 60,
    });
  });

  it('draws nothing without an answer', () => {
    expect(opsColumns(undefined).times).toEqual([]);
  });
});

describe('derived depth', () => {
  const cols = {
    times: [t0, t0 + 60, t0 + 120, t0 + 180],
    pushed: [0, 5, 0, 1],
    processed: [0, 0, 3, 1],
    width: 60,
  };

  it('runs backwards from the pending count of the last bucket', () => {
    // 5 pushed, 3 passed, then 1 and 1: 2 pending now, 0 before the first push.
    expect(derivedDepth(cols, 2, t0 + 200)).toEqual([0, 5, 2, 2]);
  });

  it('runs forwards too from a count taken in an earlier bucket', () => {
    expect(derivedDepth(cols, 5, t0 + 90)).toEqual([0, 5, 2, 2]);
  });

  it('never goes below zero when something unseen emptied the queue', () => {
    // A clear: pending 0 now although the series says 2 should be left.
    expect(derivedDepth(cols, 0, t0 + 200)).toEqual([0, 3, 0, 0]);
  });

  it('is empty without buckets', () => {
    expect(derivedDepth({ times: [], pushed: [], processed: [], width: 60 }, 3, t0)).toEqual([]);
  });
});

describe('whether the depth can be derived', () => {
  it('needs a snapshot, one group at most and no retention deletes', () => {
    expect(derivable({ groups: 1, expired: 0, statsAge: 3 })).toBeNull();
    expect(derivable({ groups: 0, expired: 0, statsAge: 0 })).toBeNull();
    expect(derivable({ groups: 2, expired: 0, statsAge: 3 })).toMatch(/2 consumer groups/);
    expect(derivable({ groups: 1, expired: 4, statsAge: 3 })).toMatch(/retention/);
    expect(derivable({ groups: 1, expired: 0, statsAge: -1 })).toMatch(/not counted/);
  });
});
