import { describe, expect, it } from 'vitest';
import { fromLocalInput, toLocalInput } from '../../src/instant.js';

describe('instants', () => {
  it('go from ISO to the input and back to the same instant, in any zone', () => {
    const iso = '2026-07-08T09:10:11.000Z';
    const local = toLocalInput(iso);
    expect(local).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    expect(fromLocalInput(local)).toBe(iso);
  });

  it('read the input as the local wall clock', () => {
    const d = new Date(2026, 0, 2, 3, 4, 5);
    expect(fromLocalInput('2026-01-02T03:04:05')).toBe(d.toISOString());
    expect(fromLocalInput('2026-01-02T03:04')).toBe(new Date(2026, 0, 2, 3, 4).toISOString());
  });

  it('leave empty or invalid values out', () => {
    expect(toLocalInput(undefined)).toBe('');
    expect(toLocalInput('nope')).toBe('');
    expect(fromLocalInput('')).toBe(undefined);
    expect(fromLocalInput('nope')).toBe(undefined);
  });
});
