// The console is served by the broker from the bundle embedded in its binary: `dist/` is
// committed, so a fresh clone builds the broker without Node. Hashed names under assets/
// let the broker cache them forever; index.html is the only unhashed file.
import { defineConfig } from 'vite';

const JSX = { runtime: 'automatic', importSource: 'preact' };

export default defineConfig({
  // Preact's automatic JSX runtime through Vite's own transform: no Babel preset needed.
  oxc: { jsx: JSX },
  // The dev server's dependency scan compiles the sources with its own transform, React's
  // JSX runtime by default: without the same settings it looks for react/jsx-dev-runtime,
  // fails, and skips pre-bundling preact and uplot.
  optimizeDeps: { rolldownOptions: { transform: { jsx: JSX } } },
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
    proxy: {
      '/api': 'http://localhost:6632',
      '/streams': 'http://localhost:6632',
      '/health': 'http://localhost:6632',
    },
  },
  test: { include: ['test/unit/**/*.test.js'] },
});
