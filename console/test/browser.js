// The console in a real browser: Debian's Chromium (headless, driven by playwright-core)
// against a live `regent dev` broker filled through the API. It checks that the pages load
// without console errors, that the overview's numbers are the API's, that the queues page
// lists (and pages, and searches) exactly the API's queues, and, on a second broker with
// authentication on, that the console asks for a token and then shows that tenant's data.
//
// Playwright launches Chromium with a fresh temporary profile of its own.
// Run: npm run browser-test  (REGENT_BIN defaults to ../target/debug/regent; pass
// --screenshots to write docs/dashboard/*.png; CHROMIUM to use another browser).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const root = resolve(new URL('../..', import.meta.url).pathname);
const bin = process.env.REGENT_BIN || join(root, 'target/debug/regent');
const screenshots = process.argv.includes('--screenshots');
const SECRET = 'console-browser-test';
let passed = 0;
let failed = 0;

function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
}

function same(name, got, want) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  check(name, g === w, `got ${g}, want ${w}`);
}

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

/** `regent dev` on a free port with its own temporary cluster; resolves once it serves. */
async function startBroker(env = {}) {
  const port = await freePort();
  const base = { ...process.env, NO_COLOR: '1', ...env };
  if (!env.JWT_ENABLED) delete base.JWT_ENABLED;
  delete base.TENANT_LIMITS;
  delete base.DATABASE_URL;
  const child = spawn(bin, ['dev', '--port', String(port)], {
    env: base,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => {
    log += d;
  });
  await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`regent dev did not start:\n${log}`)), 60000);
    child.stdout.on('data', (d) => {
      if (String(d).includes('serving on')) {
        clearTimeout(timer);
        ok();
      }
    });
    child.on('exit', (code) => fail(new Error(`regent dev exited with ${code}:\n${log}`)));
  });
  const stop = () =>
    new Promise((ok) => {
      child.removeAllListeners('exit');
      child.on('exit', ok);
      child.kill('SIGINT');
    });
  return { url: `http://127.0.0.1:${port}`, stop };
}

async function call(b, method, path, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${b.url}${path}`, {
    method,
    headers,
    body: body && JSON.stringify(body),
  });
  const v = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(v)}`);
  return v;
}

/** 55 queues (more than one page of 50), messages in each, some consumed, one dead letter. */
async function fill(b, token) {
  await call(
    b,
    'POST',
    '/api/v1/configure',
    { queue: 'orders', namespace: 'shop', task: 'billing' },
    token,
  );
  const items = [];
  for (let q = 0; q < 55; q++) {
    const queue = q === 0 ? 'orders' : `queue-${String(q).padStart(2, '0')}`;
    for (let i = 0; i <= q % 4; i++)
      items.push({ queue, partition: `p${i % 2}`, payload: { q, i } });
  }
  await call(b, 'POST', '/api/v1/push', { items }, token);
  const popped = await call(b, 'GET', '/api/v1/pop/queue/orders?batch=10&wait=false', null, token);
  const [first, ...rest] = popped.messages;
  await call(
    b,
    'POST',
    '/api/v1/ack',
    { ...ids(first), status: 'dlq', error: 'browser test' },
    token,
  );
  for (const m of rest)
    await call(b, 'POST', '/api/v1/ack', { ...ids(m), status: 'completed' }, token);
  await call(b, 'POST', '/api/v1/stats/refresh', {}, token);
  // The series is flushed every 5 s: wait for it, so the chart has the pushes to draw.
  for (let i = 0; i < 40; i++) {
    const st = await call(b, 'GET', '/api/v1/status', null, token);
    if (st.throughput.some((p) => p.processed > 0)) return;
    await new Promise((ok) => setTimeout(ok, 250));
  }
  throw new Error('the series never showed the pushes');
}

function ids(m) {
  return { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId };
}

async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A page that records every console error and uncaught exception. */
async function watched(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push({ text: m.text(), url: m.location().url });
  });
  page.on('pageerror', (e) => errors.push({ text: String(e), url: '' }));
  return { context, page, errors };
}

async function rowNames(page) {
  await page.waitForSelector('[data-testid=queues-table] tbody tr, [data-testid=empty]');
  return page.$$eval('tbody tr[data-queue]', (rows) => rows.map((r) => r.dataset.queue));
}

async function value(page, id) {
  return page.$eval(`[data-testid=${id}]`, (e) => Number(e.dataset.value));
}

async function open(page, url, hash) {
  // A new hash on the same document does not reload: the app follows `hashchange`.
  await page.goto(`${url}/${hash}`);
}

async function anonymous(browser) {
  const b = await startBroker();
  try {
    await fill(b);
    const overview = await call(b, 'GET', '/api/v1/resources/overview');
    const listed = (await call(b, 'GET', '/api/v1/resources/queues?limit=1000')).queues.map(
      (q) => q.name,
    );
    const { context, page, errors } = await watched(browser, { colorScheme: 'dark' });

    await open(page, b.url, '');
    await page.waitForSelector('[data-testid=queues-count]');
    same("overview: queues are the API's", await value(page, 'queues-count'), overview.queues);
    same(
      "overview: partitions are the API's",
      await value(page, 'partitions-count'),
      overview.partitions,
    );
    same(
      "overview: messages are the API's",
      await value(page, 'messages-total'),
      overview.messages.total,
    );
    same(
      "overview: dead letters are the API's",
      await value(page, 'dead-letters'),
      overview.messages.deadLetter,
    );
    check('overview: the snapshot is counted', (await value(page, 'stats-age')) >= 0);
    await page.waitForSelector('.chart canvas');
    check('overview: the throughput chart is drawn', true);
    if (screenshots) await shoot(page, 'overview.png');

    await open(page, b.url, '#/queues');
    const first = await rowNames(page);
    same('queues: the first page holds 50', first.length, 50);
    await page.click('text=Next →');
    await page.waitForFunction(() => location.hash.includes('page=2'));
    await page.waitForFunction(
      (name) => document.querySelector('tbody tr[data-queue]')?.dataset.queue !== name,
      first[0],
    );
    const second = await rowNames(page);
    same(
      "queues: the pages list exactly the API's queues",
      [...first, ...second].sort(),
      [...listed].sort(),
    );
    if (screenshots) {
      await open(page, b.url, '#/queues');
      await rowNames(page);
      await shoot(page, 'queues.png');
    }

    const wanted = (
      await call(b, 'GET', '/api/v1/resources/queues?search=queue-1&limit=1000')
    ).queues.map((q) => q.name);
    await page.keyboard.press('/');
    check(
      'queues: `/` focuses the search',
      await page.$eval('[data-testid=queue-search]', (e) => e === document.activeElement),
    );
    await page.keyboard.type('queue-1');
    await page.waitForFunction(() => location.hash.includes('search=queue-1'));
    await page.waitForFunction(
      (n) => document.querySelectorAll('tbody tr[data-queue]').length === n,
      wanted.length,
    );
    same(
      "queues: the search lists the API's matches",
      (await rowNames(page)).sort(),
      [...wanted].sort(),
    );
    await page.keyboard.press('ArrowDown');
    check(
      'queues: arrows move into the table',
      await page.evaluate(() => document.activeElement?.tagName === 'TR'),
    );

    await page.click('[data-testid=theme]');
    const flipped = await page
      .waitForFunction(() => document.documentElement.dataset.theme === 'light', null, {
        timeout: 5000,
      })
      .then(
        () => true,
        () => false,
      );
    check('theme: the switch flips it', flipped);
    same('no console errors', errors, []);
    await context.close();
  } finally {
    await b.stop();
  }
}

async function authenticated(browser) {
  const b = await startBroker({ JWT_ENABLED: 'true', JWT_SECRET: SECRET });
  try {
    const mint = spawnSync(bin, ['token', '--tenant', 'acme', '--role', 'admin'], {
      env: { ...process.env, JWT_SECRET: SECRET },
      encoding: 'utf8',
    });
    const token = mint.stdout.trim();
    check('a token is minted', mint.status === 0 && token.length > 0, mint.stderr);
    await fill(b, token);
    const overview = await call(b, 'GET', '/api/v1/resources/overview', null, token);
    const { context, page, errors } = await watched(browser);
    await open(page, b.url, '');
    await page.waitForSelector('[data-testid=error]');
    same(
      'auth: without a token the page says 401',
      await page.$eval('[data-testid=error]', (e) => e.dataset.status),
      '401',
    );
    await page.fill('#token', token);
    await page.click('text=Use token');
    await page.waitForSelector('[data-testid=queues-count]');
    same(
      "auth: with the token, the tenant's queues",
      await value(page, 'queues-count'),
      overview.queues,
    );
    same(
      'auth: the token is kept in the tab',
      await page.evaluate(() => sessionStorage.getItem('regent.token')),
      token,
    );
    // The only errors are Chromium's own lines for the API's 401 answers before the token.
    const unexpected = errors.filter(
      (e) => !(e.text.includes('401') && e.url.includes('/api/v1/')),
    );
    same('auth: no other console errors', unexpected, []);
    await context.close();
  } finally {
    await b.stop();
  }
}

async function shoot(page, name) {
  const dir = join(root, 'docs/dashboard');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, name) });
}

const browser = await launch();
try {
  await anonymous(browser);
  await authenticated(browser);
} catch (e) {
  failed++;
  console.log(`FAIL ${e.stack || e}`);
} finally {
  await browser.close();
}
console.log(`console browser test: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
