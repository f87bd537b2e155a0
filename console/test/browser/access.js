// With authentication on: the console asks for a token, then shows that tenant's data.
import { call, open, same, value, watched } from './harness.js';

export async function authenticated({ browser, b, tokens }) {
  const token = tokens.admin;
  const overview = await call(b, 'GET', '/api/v1/resources/overview', null, token);
  const { context, page, errors } = await watched(browser);
  await open(page, b, '');
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
  await page.waitForSelector('[data-testid=session]');
  same(
    'auth: the header names the tenant and role',
    await page.$eval('[data-testid=session]', (e) => [e.dataset.tenant, e.dataset.role]),
    ['acme', 'admin'],
  );
  same(
    'auth: the token is kept in the tab',
    await page.evaluate(() => sessionStorage.getItem('regent.token')),
    token,
  );
  // The only errors are Chromium's own lines for the API's 401 answers before the token.
  const unexpected = errors.filter((e) => !(e.text.includes('401') && e.url.includes('/api/v1/')));
  same('auth: no other console errors', unexpected, []);
  await context.close();
  await secondTenant({ browser, b, tokens });
}

/** A second tenant's token sees none of the first tenant's queues, on any page. */
async function secondTenant({ browser, b, tokens }) {
  const acme = await call(b, 'GET', '/api/v1/resources/queues?limit=1000', null, tokens.admin);
  const { context, page, errors } = await watched(browser);
  await context.addInitScript((t) => sessionStorage.setItem('regent.token', t), tokens.other);
  await open(page, b, '');
  await page.waitForSelector('[data-testid=queues-count]');
  same(
    'second tenant: the header names globex',
    await page.$eval('[data-testid=session]', (e) => e.dataset.tenant),
    'globex',
  );
  same('second tenant: the overview counts no queue', await value(page, 'queues-count'), 0);
  same('second tenant: acme has queues', acme.queues.length > 0, true);
  await open(page, b, '#/queues');
  await page.waitForSelector('[data-testid=empty]');
  same(
    "second tenant: the queue list names none of acme's",
    await page.$$eval('tbody tr[data-queue]', (r) => r.length),
    0,
  );
  await open(page, b, '#/queues?search=orders');
  await page.waitForSelector('[data-testid=empty]');
  same(
    "second tenant: a search for acme's queue finds nothing",
    await page.$eval('[data-testid=empty] h2', (e) => e.textContent),
    'No queue matches “orders”',
  );
  same('second tenant: no console errors', errors, []);
  await context.close();
}
