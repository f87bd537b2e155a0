// The console is served by the broker from the bundle embedded in its binary: `dist/` is
// committed, so a fresh clone builds the broker without Node. Hashed names under assets/
// let the broker cache them forever; index.html is the only unhashed file.
import { defineConfig } from 'vite';

export default defineConfig({
  // Preact's automatic JSX runtime through Vite's own transform: no Babel preset needed.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2020',
    assetsDir: 'assets',
    // The broker serves only index.html and assets/: one JS and one CSS file keep the
    // first page to three requests on loopback.
    cssCodeSplit: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev` against a broker on its default port.
    proxy: { '/api': 'http://localhost:6632', '/health': 'http://localhost:6632' },
  },
  test: { include: ['test/unit/**/*.test.js'] },
});
