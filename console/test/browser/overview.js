// The overview: its numbers are the API's, its chart is drawn, the theme switch works.
import { becomes, call, check, open, same, shoot, value, watched } from './harness.js';

export async function anonymous({ browser, b }) {
  const overview = await call(b, 'GET', '/api/v1/resources/overview');
  const { context, page, errors } = await watched(browser, { colorScheme: 'dark' });
  await open(page, b, '');
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
  await shoot(page, 'overview.png');

  await page.click('[data-testid=theme]');
  check(
    'theme: the switch flips it',
    await becomes(page, () => document.documentElement.dataset.theme === 'light'),
  );
  same('overview: no console errors', errors, []);
  await context.close();
}
