import { describe, expect, it } from 'vitest';
import { opsColumns } from '../../src/queue-ops.js';

const from = '2026-01-01T00:00:00.000Z';
const t0 = Date.parse(from) / 1000;
const at = (min) => new Date((t0 + min * 60) * 1000).toISOString();

describe('queue series', () => {
  it('fills every bucket of the window, oldest first', () => {
    const cols = opsColumns({
      bucketMinutes: 1,
      timeRange: { from, to: at(4) },
      series: [
        { timestamp: at(1), push: 5, ack: 0 },
        { timestamp: at(3), push: 1, ack: 4 },
      ],
    });
    expect(cols).toEqual({
      times: [t0, t0 + 60, t0 + 120, t0 + 180],
      pushed: [0, 5, 0, 1],
      processed: [0, 0, 0, 4],
    });
  });

  it('draws nothing without an answer', () => {
    expect(opsColumns(undefined).times).toEqual([]);
  });
});
