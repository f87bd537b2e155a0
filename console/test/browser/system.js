// The system page and the overview's fleet and backlog panels: the brokers listed are the
// API's, the database figures are PostgreSQL's as the API reports them, and a maintenance
// switch flipped from the page is flipped in the broker.
import { becomes, call, check, open, same, shoot, value, watched } from './harness.js';

export async function anonymous({ browser, b }) {
  const { context, page, errors } = await watched(browser);
  const fleet = await call(b, 'GET', '/api/v1/analytics/worker-metrics');
  const brokers = fleet.workers.map((w) => `${w.hostname}:${w.port}`).sort();

  await open(page, b, '');
  await page.waitForSelector('[data-testid=brokers] tbody tr');
  same(
    "overview: the brokers are the API's",
    (
      await page.$$eval('[data-testid=brokers] tbody tr', (r) => r.map((e) => e.dataset.broker))
    ).sort(),
    brokers,
  );
  const status = await call(b, 'GET', '/api/v1/status');
  check(
    'overview: the API has a depth point',
    status.depth.length > 0,
    JSON.stringify(status.depth),
  );
  check(
    'overview: the depth and lag charts are drawn',
    await becomes(page, () => document.querySelectorAll('.chart canvas').length === 3),
  );

  await open(page, b, '#/system');
  await page.waitForSelector('[data-testid=postgres]');
  await page.waitForSelector('[data-testid=brokers] tbody tr');
  same(
    "system: the brokers are the API's",
    (
      await page.$$eval('[data-testid=brokers] tbody tr', (r) => r.map((e) => e.dataset.broker))
    ).sort(),
    brokers,
  );
  const pg = await call(b, 'GET', '/api/v1/analytics/postgres-stats');
  same(
    "system: the database's name is the API's",
    await page.$eval('[data-testid=postgres] h2', (e) => e.textContent),
    `PostgreSQL: ${pg.database}`,
  );
  same(
    "system: the largest tables are the API's",
    await page.$$eval('[data-testid=pg-tables] tbody tr', (r) => r.map((e) => e.dataset.table)),
    pg.tableSizes.slice(0, 12).map((t) => t.table),
  );
  await shoot(page, 'system.png');

  // Pop maintenance on from the page: the broker's pops answer paused; then off again.
  same('system: pop maintenance starts off', await value(page, 'pop-maintenance'), 0);
  await page.click('[data-testid=pop-switch]');
  await page.click('[data-testid=confirm-action]');
  await page.waitForSelector('[data-testid=pop-maintenance][data-value="1"]');
  const on = await call(b, 'GET', '/api/v1/system/maintenance/pop');
  same('system: the switch turns pop maintenance on', on.popMaintenanceMode, true);
  const paused = await call(b, 'GET', '/api/v1/pop/queue/queue-03?wait=false');
  same('system: pops are then paused', paused?.paused, true);
  await page.click('[data-testid=pop-switch]');
  await page.click('[data-testid=confirm-action]');
  await page.waitForSelector('[data-testid=pop-maintenance][data-value="0"]');
  const off = await call(b, 'GET', '/api/v1/system/maintenance/pop');
  same('system: and off again', off.popMaintenanceMode, false);
  // Cancel leaves the switch alone.
  await page.click('[data-testid=push-switch]');
  await page.waitForSelector('[data-testid=confirm][open]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('[data-testid=confirm]', { state: 'detached' });
  const push = await call(b, 'GET', '/api/v1/system/maintenance');
  same('system: a cancelled switch changes nothing', push.maintenanceMode, false);
  same('system: no console errors', errors, []);
  await context.close();
}

export async function authenticated({ browser, b, tokens }) {
  const { context, page, errors } = await watched(browser);
  await context.addInitScript(
    (t) => sessionStorage.setItem('regent.token', t),
    tokens['read-only'],
  );
  // whoami answers late, as over a slow link: until it has, no page may call a route the
  // role may not (a page drawn for an unknown session shows everything).
  await context.route('**/api/v1/whoami', async (route) => {
    await new Promise((done) => setTimeout(done, 500));
    await route.continue();
  });
  await open(page, b, '');
  await page.waitForSelector('[data-testid=session][data-role=read-only]');
  same(
    'read-only: no System tab and no brokers panel',
    await page.evaluate(() => [
      [...document.querySelectorAll('.tabs a')].some((a) => a.textContent === 'System'),
      Boolean(document.querySelector('[data-testid=brokers]')),
    ]),
    [false, false],
  );
  await open(page, b, '#/system');
  await page.waitForSelector('[data-testid=error]');
  same(
    'read-only: the system page says 403',
    await page.$eval('[data-testid=error]', (e) => e.dataset.status),
    '403',
  );
  same('read-only: no console errors', errors, []);
  await context.close();
}
