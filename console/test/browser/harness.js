// What every browser scenario uses: a `regent dev` broker with its own temporary cluster,
// the API called directly (to fill data and to know the numbers the pages must show),
// Chromium launched from the system package, pages that record console errors, and the
// tally of checks.
//
// With `--vite` (or CONSOLE=vite) the pages are served by Vite's dev server straight from
// console/src, proxying the API to the broker: the sources are tested without building
// dist/ or the broker. Without it the console is the one embedded in the broker binary.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const root = resolve(new URL('../../..', import.meta.url).pathname);
export const bin = process.env.REGENT_BIN || join(root, 'target/debug/regent');
export const screenshots = process.argv.includes('--screenshots');
const fromSources = process.argv.includes('--vite') || process.env.CONSOLE === 'vite';
export const SECRET = 'console-browser-test';

export const tally = { passed: 0, failed: 0 };

export function check(name, ok, detail = '') {
  if (ok) tally.passed++;
  else tally.failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `: ${detail}`}`);
}

export function same(name, got, want) {
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

/**
 * `regent dev` on a free port with its own temporary cluster; resolves once it serves.
 * Answers `{ url, console, stop }`: `url` is the API, `console` where the pages are opened.
 */
export async function startBroker(env = {}) {
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
    // Generous: a private cluster's initdb right after the suite's heavy passes (Citus
    // clusters being deleted, the disk flushing) once took over a minute to say anything.
    const timer = setTimeout(() => fail(new Error(`regent dev did not start:\n${log}`)), 180000);
    child.stdout.on('data', (d) => {
      if (String(d).includes('serving on')) {
        clearTimeout(timer);
        ok();
      }
    });
    child.on('exit', (code) => fail(new Error(`regent dev exited with ${code}:\n${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const vite = fromSources ? await viteFor(url) : null;
  const stop = async () => {
    await vite?.close();
    await new Promise((ok) => {
      child.removeAllListeners('exit');
      child.on('exit', ok);
      child.kill('SIGINT');
    });
  };
  return { url, console: vite ? vite.resolvedUrls.local[0].replace(/\/$/, '') : url, stop };
}

async function viteFor(api) {
  const { createServer: vite } = await import('vite');
  const server = await vite({
    root: join(root, 'console'),
    logLevel: 'error',
    server: {
      host: '127.0.0.1',
      port: await freePort(),
      proxy: { '/api': api, '/streams': api, '/health': api },
    },
  });
  return server.listen();
}

/** A token minted by the broker binary, as an operator would. */
export function mint(tenant, role) {
  const out = spawnSync(bin, ['token', '--tenant', tenant, '--role', role], {
    env: { ...process.env, JWT_SECRET: SECRET },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`regent token failed: ${out.stderr}`);
  return out.stdout.trim();
}

function request(b, method, path, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  return fetch(`${b.url}${path}`, { method, headers, body: body && JSON.stringify(body) });
}

/** An API call; throws on a non-2xx answer unless `expect` names the status wanted. */
export async function call(b, method, path, body, token, expect) {
  const res = await request(b, method, path, body, token);
  const text = await res.text();
  const v = text ? JSON.parse(text) : null;
  if (expect !== undefined) {
    if (res.status !== expect)
      throw new Error(`${method} ${path}: ${res.status}, wanted ${expect}: ${text}`);
  } else if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return v;
}

/** The HTTP status an API call answers, for checks that a role is refused (403). */
export async function status(b, method, path, body, token) {
  const res = await request(b, method, path, body, token);
  await res.arrayBuffer();
  return res.status;
}

export function ids(m) {
  return { transactionId: m.transactionId, partitionId: m.partitionId, leaseId: m.leaseId };
}

export async function launch() {
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
export async function watched(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push({ text: m.text(), url: m.location().url });
  });
  page.on('pageerror', (e) => errors.push({ text: String(e), url: '' }));
  return { context, page, errors };
}

/** The number a `data-testid` element carries in its `data-value`. */
export async function value(page, id) {
  return page.$eval(`[data-testid=${id}]`, (e) => Number(e.dataset.value));
}

/** Opens the console at a hash route (`#/queues`), loading the page afresh. */
export async function open(page, b, hash) {
  await page.goto(`${b.console}/${hash}`);
}

/** Whether `fn` comes true in the page within `ms`. */
export async function becomes(page, fn, arg, ms = 5000) {
  return page.waitForFunction(fn, arg, { timeout: ms }).then(
    () => true,
    () => false,
  );
}

export async function shoot(page, name) {
  if (!screenshots) return;
  const dir = join(root, 'docs/dashboard');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, name) });
}

/** `watched`, with `token` in the tab's sessionStorage as the console keeps it. */
export async function watchedAs(browser, token) {
  const w = await watched(browser);
  await w.context.addInitScript((t) => sessionStorage.setItem('regent.token', t), token);
  return w;
}

/** The selector of a keyed row (`tr[data-key]`), for any key: `"` and `\` escaped. */
export function keyRow(key) {
  return `tr[data-key="${key.replace(/["\\]/g, '\\$&')}"]`;
}

/** Whether the table `table` (its `data-testid`) comes to show exactly `keys`, in that order. */
export function showsKeys(page, table, keys) {
  return becomes(
    page,
    ([t, want]) =>
      JSON.stringify(
        [...document.querySelectorAll(`[data-testid=${t}] tbody tr[data-key]`)].map(
          (r) => r.dataset.key,
        ),
      ) === JSON.stringify(want),
    [table, keys],
  );
}

/**
 * A keyset pager (`KeysetPager`, testids `{id}-…`) over two pages, `first` and `second` (their
 * keys, the second the last, after the API's `nextAfter`), shown in the table `table`: "Next
 * page" turns to the API's page after `nextAfter`, which says it is the last; "First page"
 * goes back; `]` and `[` do the same. `onSecond` checks more while the second page is shown.
 */
export async function keysetPages(page, { name, id, table, nextAfter, first, second, onSecond }) {
  await page.click(`[data-testid=${id}-next]`);
  await page.waitForFunction(
    (after) => new URLSearchParams(location.hash.split('?')[1]).get('after') === after,
    nextAfter,
  );
  check(
    `${name}: the next page is the API's page after nextAfter`,
    await showsKeys(page, table, second),
  );
  await onSecond?.();
  same(
    `${name}: it is the last page, without a next`,
    [await page.textContent(`[data-testid=${id}-page]`), await page.$(`[data-testid=${id}-next]`)],
    [`Keys after “${nextAfter}” (the last page)`, null],
  );
  await page.click(`[data-testid=${id}-first]`);
  check(`${name}: the first page again`, await showsKeys(page, table, first));
  await page.focus(keyRow(first[0]));
  await page.keyboard.press(']');
  check(`${name}: \`]\` turns to the next page`, await showsKeys(page, table, second));
  await page.focus(keyRow(second[0]));
  await page.keyboard.press('[');
  check(`${name}: \`[\` goes back to the first`, await showsKeys(page, table, first));
}

/** Clicks `selector` and waits for the confirmation it asks. */
export async function askFrom(page, selector) {
  await page.click(selector);
  await page.waitForSelector('[data-testid=confirm][open]');
}

/** Confirms the open question and waits for the page's outcome of `kind` (`{id}-result`). */
export async function confirmed(page, id, kind) {
  await page.click('[data-testid=confirm-action]');
  await page.waitForSelector(`[data-testid=${id}-result][data-kind=${kind}]`);
}

/** Asks from the focused row `selector` with the Delete key, then backs out with Escape. */
export async function backedOut(page, selector) {
  await page.focus(selector);
  await page.keyboard.press('Delete');
  await page.waitForSelector('[data-testid=confirm][open]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('[data-testid=confirm]', { state: 'detached' });
}

/** The tab the header marks as the current page's. */
export function currentTab(page) {
  return page.$eval('.tabs a[aria-current=page]', (e) => e.textContent);
}
