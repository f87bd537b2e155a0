import { describe, expect, it } from 'vitest';
import { nextSort, parseSort, sortRows } from '../../src/sort.js';

describe('sort text', () => {
  it('reads a column and its direction, refusing unknown columns', () => {
    expect(parseSort('-pending', ['name', 'pending'])).toEqual({ key: 'pending', desc: true });
    expect(parseSort('name', ['name', 'pending'])).toEqual({ key: 'name', desc: false });
    expect(parseSort('-bogus', ['name'])).toBeNull();
    expect(parseSort(undefined, ['name'])).toBeNull();
  });

  it('flips the column clicked again, starts another in its natural direction', () => {
    expect(nextSort(null, 'pending', true)).toBe('-pending');
    expect(nextSort({ key: 'pending', desc: true }, 'pending', true)).toBe('pending');
    expect(nextSort({ key: 'pending', desc: false }, 'pending', true)).toBe('-pending');
    expect(nextSort({ key: 'pending', desc: true }, 'name', false)).toBe('name');
  });
});

describe('sorting rows', () => {
  const rows = [
    { name: 'p10', n: 2 },
    { name: 'p9', n: 5 },
    { name: 'p1', n: null },
    { name: 'p2', n: 2 },
  ];
  const names = (rs) => rs.map((r) => r.name);

  it('orders numbers either way, missing values last, ties in the given order', () => {
    expect(names(sortRows(rows, (r) => r.n, true))).toEqual(['p9', 'p10', 'p2', 'p1']);
    expect(names(sortRows(rows, (r) => r.n, false))).toEqual(['p10', 'p2', 'p9', 'p1']);
  });

  it('orders names naturally (p9 before p10)', () => {
    expect(names(sortRows(rows, (r) => r.name, false))).toEqual(['p1', 'p2', 'p9', 'p10']);
  });

  it('leaves the rows it was given alone', () => {
    const copy = [...rows];
    sortRows(rows, (r) => r.n, true);
    expect(rows).toEqual(copy);
  });
});
