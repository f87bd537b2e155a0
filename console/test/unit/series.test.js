import { describe, expect, it } from 'vitest';
import {
  carryForward,
  levelColumns,
  queueLevelColumns,
  throughputColumns,
} from '../../src/series.js';

const window3 = {
  bucketMinutes: 1,
  timeRange: { from: '2026-12-02T10:00:00.000Z', to: '2026-12-02T10:03:00.000Z' },
};
const t0 = Date.parse(window3.timeRange.from) / 1000;

describe('throughputColumns', () => {
  it('fills every bucket of the window, quiet ones with 0', () => {
    const cols = throughputColumns({
      ...window3,
      throughput: [
        { timestamp: '2026-12-02T10:02:00.000Z', ingestedPerSecond: 2, processedPerSecond: 1 },
      ],
    });
    expect(cols).toEqual([
      [t0, t0 + 60, t0 + 120],
      [0, 0, 2],
      [0, 0, 1],
    ]);
  });
});

describe('levelColumns', () => {
  it('places each point in its bucket and leaves buckets without a round null', () => {
    const cols = levelColumns(
      {
        ...window3,
        depth: [
          { timestamp: '2026-12-02T10:02:00.000Z', pending: 5, lagMessages: 3 },
          { timestamp: '2026-12-02T10:00:00.000Z', pending: 9, lagMessages: 0 },
        ],
      },
      ['pending', 'lagMessages'],
    );
    expect(cols).toEqual([
      [t0, t0 + 60, t0 + 120],
      [9, null, 5],
      [0, null, 3],
    ]);
  });

  it('answers empty columns without a window', () => {
    expect(levelColumns(null, ['pending'])).toEqual([[], []]);
  });
});

describe('carryForward', () => {
  it('fills the buckets after the first point with the last level, not those before', () => {
    expect(carryForward([null, 4, null, null, 2, null])).toEqual([null, 4, 4, 4, 2, 2]);
    expect(carryForward([0, null, 3])).toEqual([0, 0, 3]);
    expect(carryForward([null, null])).toEqual([null, null]);
    expect(carryForward([])).toEqual([]);
  });
});

describe('queueLevelColumns', () => {
  it("carries a queue's rows forward from the window's start to its end", () => {
    const cols = queueLevelColumns(
      {
        ...window3,
        // Newest first; the first is the row carried to the window's start.
        depth: [
          { timestamp: '2026-12-02T10:01:00.000Z', pending: 2, lagMessages: 1 },
          { timestamp: '2026-12-02T10:00:00.000Z', pending: 7, lagMessages: 0 },
        ],
      },
      ['pending', 'lagMessages'],
    );
    expect(cols).toEqual([
      [t0, t0 + 60, t0 + 120],
      [7, 2, 2],
      [0, 1, 1],
    ]);
  });
});
