// How fast the console's first page is usable on loopback (issue 14 asks for under a
// second): a `regent dev` broker filled as the browser test fills it, then ROUNDS loads of
// the overview in fresh browser contexts (a cold cache each, so every asset is fetched),
// each timed from navigation start to the moment the overview shows its counts, and the
// bytes the page transferred. A benchmark, not a test: it prints figures and asserts nothing.
//
// Run: node bench/first-page.js   (ROUNDS=10; REGENT_BIN as for the browser test)
import { fill } from '../test/browser/fill.js';
import { launch, startBroker } from '../test/browser/harness.js';

const rounds = Number(process.env.ROUNDS || 10);
const b = await startBroker();
const browser = await launch();
try {
  await fill(b);
  const runs = [];
  for (let i = 0; i < rounds; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${b.console}/`);
    await page.waitForSelector('[data-testid=queues-count]');
    runs.push(
      await page.evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const res = performance.getEntriesByType('resource');
        const bytes = [nav, ...res].reduce((n, e) => n + (e.transferSize || 0), 0);
        return {
          usable: performance.now(),
          requests: res.length + 1,
          bytes,
          domReady: nav.domContentLoadedEventEnd,
        };
      }),
    );
    await context.close();
  }
  const sorted = (k) => runs.map((r) => r[k]).sort((x, y) => x - y);
  const median = (k) => sorted(k)[Math.floor(runs.length / 2)];
  const max = (k) => sorted(k)[runs.length - 1];
  console.log(`first page, ${rounds} cold loads on loopback:`);
  console.log(
    `  usable (counts shown): median ${median('usable').toFixed(0)} ms, worst ${max('usable').toFixed(0)} ms`,
  );
  console.log(`  DOMContentLoaded:      median ${median('domReady').toFixed(0)} ms`);
  console.log(
    `  requests by then:      median ${median('requests')}; transferred median ${median('bytes')} bytes`,
  );
} finally {
  await browser.close();
  await b.stop();
}
