import { describe, expect, it } from 'vitest';
import { deleteAsks } from '../../src/keys.js';

/** A keydown on a row, or (`inner`) on a control inside it. */
function keydown(key, inner = false) {
  const row = {};
  return { key, currentTarget: row, target: inner ? {} : row, preventDefault() {} };
}

describe('deleteAsks', () => {
  it('asks on Delete from the row itself, and passes every other key on', () => {
    const asked = [];
    const passed = [];
    const onKey = deleteAsks(
      () => asked.push('ask'),
      (e) => passed.push(e.key),
    );
    onKey(keydown('Delete'));
    onKey(keydown('ArrowDown'));
    onKey(keydown('Delete', true));
    expect(asked).toEqual(['ask']);
    expect(passed).toEqual(['ArrowDown', 'Delete']);
  });
});
