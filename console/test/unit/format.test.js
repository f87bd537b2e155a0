import { describe, expect, it } from 'vitest';
import { bytes, count, date, duration, percent, rate, statsAge } from '../../src/format.js';

describe('format', () => {
  it('groups counts and shows a dash for none', () => {
    expect(count(1234567)).toBe('1,234,567');
    expect(count(0)).toBe('0');
    expect(count(null)).toBe('—');
  });

  it('gives small rates two decimals and large ones none', () => {
    expect(rate(0)).toBe('0/s');
    expect(rate(0.5)).toBe('0.50/s');
    expect(rate(0.003)).toBe('<0.01/s');
    expect(rate(1234.4)).toBe('1,234/s');
  });

  it('says durations in the largest units that fit', () => {
    expect(duration(42)).toBe('42 s');
    expect(duration(300)).toBe('5 min');
    expect(duration(3 * 3600 + 20 * 60)).toBe('3 h 20 min');
    expect(duration(2 * 86400 + 4 * 3600)).toBe('2 d 4 h');
    expect(duration(null)).toBe('—');
  });

  it("says the snapshot's age, and when there is none yet", () => {
    expect(statsAge(-1)).toBe('not counted yet');
    expect(statsAge(3)).toBe('counted 3 s ago');
  });

  it('shows instants in UTC to the minute', () => {
    expect(date('2026-11-01T10:20:30.000Z')).toBe('2026-11-01 10:20');
    expect(date(null)).toBe('—');
  });
});

describe('bytes and percent', () => {
  it('says sizes in powers of 1024', () => {
    expect(bytes(812)).toBe('812 B');
    expect(bytes(28463104)).toBe('27 MB');
    expect(bytes(1536)).toBe('1.5 KB');
    expect(bytes(null)).toBe('—');
  });

  it('keeps one decimal below 10 %', () => {
    expect(percent(1.74)).toBe('1.7 %');
    expect(percent(97.83)).toBe('98 %');
    expect(percent(null)).toBe('—');
  });
});
