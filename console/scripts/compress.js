// Precompresses the built bundle: the broker serves `file.br` or `file.gz` next to each
// file to clients that accept them, so it compresses nothing at run time. Both encoders are
// deterministic (the gzip header carries no time), so `git diff --exit-code dist` after a
// rebuild tells whether the committed bundle is current.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

// The bundle's directory: dist/, or the one named (scripts/console-check builds elsewhere).
const dist = process.argv[2] ?? new URL('../dist/', import.meta.url).pathname;
const compressible = /\.(html|js|css|svg|json|txt)$/;

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

let raw = 0;
let gz = 0;
for (const path of walk(dist).filter((p) => compressible.test(p))) {
  const bytes = readFileSync(path);
  const gzipped = gzipSync(bytes, { level: 9 });
  const brotli = brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
  writeFileSync(`${path}.gz`, gzipped);
  writeFileSync(`${path}.br`, brotli);
  raw += bytes.length;
  gz += gzipped.length;
}
console.log(`console bundle: ${raw} bytes, ${gz} bytes gzipped`);
