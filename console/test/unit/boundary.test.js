// The console's one way to the broker is src/api.js (ARCHITECTURE.md: "the console is a
// client of the public API"): no other module may fetch, open sockets or send beacons.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const src = new URL('../../src', import.meta.url).pathname;

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.(js|jsx)$/.test(n) ? [p] : [];
  });
}

describe('the boundary', () => {
  it('lets only api.js reach the network', () => {
    const reaching = files(src)
      .filter((f) =>
        /\bfetch\(|XMLHttpRequest|WebSocket|EventSource|sendBeacon/.test(readFileSync(f, 'utf8')),
      )
      .map((f) => relative(src, f));
    expect(reaching).toEqual(['api.js']);
  });
});
