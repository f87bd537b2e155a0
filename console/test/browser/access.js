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
}
