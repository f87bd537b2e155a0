import { describe, expect, it } from 'vitest';
import {
  deleteBody,
  deleteVerdict,
  expires,
  KV_PAGE,
  kvHref,
  missing,
  prefixBody,
  prefixPage,
  readKv,
} from '../../src/kv.js';
import { parse } from '../../src/route.js';

const ROW = {
  key: 'user:001',
  value: { name: 'Ada' },
  version: 3,
  expiresAt: null,
  updatedAt: '2026-01-01T00:00:00.123Z',
};

describe('the key/value route', () => {
  it('reads the namespace, prefix and position, spaces kept', () => {
    expect(readKv({ ns: 'app', prefix: ' user:', after: 'user:100' })).toEqual({
      ns: 'app',
      prefix: ' user:',
      after: 'user:100',
    });
    expect(readKv({})).toEqual({ ns: '', prefix: '', after: '' });
    expect(readKv()).toEqual({ ns: '', prefix: '', after: '' });
  });

  it('lacks a namespace first, then a prefix', () => {
    expect(missing({ ns: '', prefix: '' })).toBe('ns');
    expect(missing({ ns: '', prefix: 'user:' })).toBe('ns');
    expect(missing({ ns: 'app', prefix: '' })).toBe('prefix');
    expect(missing({ ns: 'app', prefix: 'user:' })).toBe(null);
  });

  it('links a page and parses back to it, the first without its position', () => {
    const to = kvHref({ ns: 'a b', prefix: 'user:&x=1', after: 'user:\u001f9' });
    expect(to.startsWith('#/kv?')).toBe(true);
    expect(parse(to)).toEqual({
      path: '/kv',
      query: { ns: 'a b', prefix: 'user:&x=1', after: 'user:\u001f9' },
    });
    expect(kvHref({ ns: 'app', prefix: 'user:', after: '' })).toBe('#/kv?ns=app&prefix=user%3A');
    expect(kvHref()).toBe('#/kv');
  });
});

describe('the prefix read', () => {
  it('asks for one page by prefix, after a key when one is given', () => {
    expect(prefixBody({ ns: 'app', prefix: 'user:', after: '' })).toEqual({
      operations: [{ op: 'getPrefix', ns: 'app', prefix: 'user:', limit: KV_PAGE }],
    });
    expect(prefixBody({ ns: 'app', prefix: 'user:', after: 'user:100' }, 5)).toEqual({
      operations: [{ op: 'getPrefix', ns: 'app', prefix: 'user:', after: 'user:100', limit: 5 }],
    });
    expect(KV_PAGE).toBe(100);
  });

  it('answers the rows, and where the next page starts only when there is one', () => {
    const page = (truncated, nextAfter) => ({
      results: [{ rows: [ROW], truncated, nextAfter }],
    });
    expect(prefixPage(page(true, 'user:001'))).toEqual({ rows: [ROW], nextAfter: 'user:001' });
    expect(prefixPage(page(false, null))).toEqual({ rows: [ROW], nextAfter: null });
    // A position without the page cut short leads to no page.
    expect(prefixPage(page(false, 'user:001')).nextAfter).toBe(null);
    expect(prefixPage(null)).toEqual({ rows: [], nextAfter: null });
    expect(prefixPage({ results: [] })).toEqual({ rows: [], nextAfter: null });
  });

  it('says when a row expires, or that it never does', () => {
    expect(expires(null)).toBe('never');
    expect(expires(undefined)).toBe('never');
    expect(expires('2026-01-01T10:00:00.250Z')).toBe('2026-01-01 10:00:00.250');
  });
});

describe('the delete', () => {
  it('is fenced by the version shown, and not required', () => {
    expect(deleteBody({ ns: 'app', key: 'user:001', version: 3 })).toEqual({
      operations: [{ op: 'delete', ns: 'app', key: 'user:001', expect: 3 }],
    });
  });

  it('says what the broker did', () => {
    const answer = (r) => ({ results: [r] });
    expect(deleteVerdict(answer({ applied: true, key: 'k', version: 3 }), 'k')).toEqual({
      kind: 'deleted',
      text: 'Deleted “k” (version 3).',
    });
    const changed = deleteVerdict(
      answer({ applied: false, key: 'k', reason: 'version', value: 2, version: 4 }),
      'k',
    );
    expect(changed.kind).toBe('changed');
    expect(changed.text).toContain('version 4 now');
    expect(changed.text).toContain('nothing was deleted');
    const absent = deleteVerdict(
      answer({ applied: false, key: 'k', reason: 'absent', value: null, version: 0 }),
      'k',
    );
    expect(absent.kind).toBe('absent');
    expect(absent.text).toContain('gone already');
    expect(deleteVerdict(answer({ applied: false, reason: 'min' }), 'k')).toEqual({
      kind: 'other',
      text: '“k” was not deleted (min).',
    });
    expect(deleteVerdict(null, 'k').kind).toBe('other');
  });
});
