// The timers page: the queues with pending timers as `GET /api/v1/timers` answers them, a
// queue's timers as `GET /api/v1/timers/{queue}` pages them (keys in order, 100 a page, the
// next one after `nextAfter`), each row's deadline, txn and message id; a peek showing the
// payload decoded; a cancel from the page (gone from the broker), fenced by the txn shown (a
// timer rescheduled meanwhile is kept). With authentication: a read-only token sees the
// timers and peeks but is offered no Cancel (and the broker refuses it the DELETE), a
// read-write token cancels, another tenant sees none of acme's. Timers are scheduled through
// the API an hour ahead, so none fires during the test.
import {
  askFrom,
  backedOut,
  becomes,
  call,
  check,
  confirmed,
  currentTab,
  keysetPages,
  open,
  keyRow as row,
  same,
  shoot,
  showsKeys,
  status,
  watched,
  watchedAs,
} from './harness.js';

const QUEUE = 'console-timers';
const OTHER = 'console-timers-b';
const ORDERS = 103;
const HOUR = 3600 * 1000;
// Keys that must reach the broker whole: `/`, dot segments, and what a URL reads as its own.
const ODD = ['a/../b', 'odd key?#%'];

function order(i) {
  return `order/${String(i).padStart(3, '0')}`;
}

function b64(value) {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

function schedule(queue, timerKey, value, delayMs, txn) {
  const op = { op: 'schedule', queue, timerKey, payload: b64(value), delayMs };
  if (txn) op.txn = txn;
  return op;
}

async function timers(b, operations, token) {
  const done = await call(b, 'POST', '/api/v1/timers', { operations }, token);
  if (!done.results.every((r) => r.ok))
    throw new Error(`a schedule did not apply: ${JSON.stringify(done)}`);
  return done.results;
}

const enc = encodeURIComponent;

async function pageOf(b, after, token, queue = QUEUE) {
  const q = after ? `after=${enc(after)}&limit=100` : 'limit=100';
  return call(b, 'GET', `/api/v1/timers/${enc(queue)}?${q}`, null, token);
}

function peekOf(b, key, token) {
  return call(b, 'GET', `/api/v1/timers/${enc(QUEUE)}/${enc(key)}`, null, token);
}

/**
 * 103 orders an hour ahead (a second apart, each under its own txn), two keys a path would
 * misread, and a second queue of two.
 */
async function make(b, token) {
  const ops = [];
  for (let i = 0; i < ORDERS; i++)
    ops.push(schedule(QUEUE, order(i), { n: i, tags: ['a', i] }, HOUR + i * 1000, `timer-${i}`));
  ops.push(schedule(QUEUE, ODD[0], { name: 'é ✓', nested: { list: [1, 2] } }, HOUR));
  ops.push(schedule(QUEUE, ODD[1], 'a string', HOUR));
  ops.push(schedule(OTHER, 'x', 1, 2 * HOUR));
  ops.push(schedule(OTHER, 'y', 2, 2 * HOUR));
  await timers(b, ops, token);
}

/** A time as the page shows it (UTC, to the millisecond). */
function shown(iso) {
  return iso.replace('T', ' ').slice(0, 23);
}

const shownQueues = (page) =>
  page.$$eval('[data-testid=timer-queues] tbody tr[data-queue]', (rows) =>
    rows.map((r) => {
      const col = (c) => r.querySelector(`[data-col=${c}]`);
      return [r.dataset.queue, Number(col('pending').dataset.value), col('next').dataset.value];
    }),
  );

const shownRows = (page) =>
  page.$$eval('[data-testid=timers-table] tbody tr[data-key]', (rows) =>
    rows.map((r) => {
      const col = (c) => r.querySelector(`[data-col=${c}]`).textContent;
      return [r.dataset.key, col('deliver'), col('txn'), col('message')];
    }),
  );

function expected(rows) {
  return rows.map((r) => [r.timerKey, shown(r.deliverAt), r.txn, r.messageId]);
}

/** Peeks at `key` from its row's button and answers the payload block's text. */
async function peek(page, key) {
  await page.click(`${row(key)} [data-testid=timer-peek]`);
  const block = await page.waitForSelector(
    `tr[data-peek="${key.replace(/["\\]/g, '\\$&')}"] [data-testid=peek-payload]`,
  );
  return block.textContent();
}

export async function anonymous({ browser, b }) {
  await make(b);
  const { context, page, errors } = await watched(browser);

  // The queues with pending timers.
  await open(page, b, '#/timers');
  await page.waitForSelector('[data-testid=timer-queues] tbody tr');
  same('timers: the tab is shown and current', await currentTab(page), 'Timers');
  const queues = (await call(b, 'GET', '/api/v1/timers')).queues;
  same(
    'timers: the API has both queues, with their counts',
    queues.map((q) => [q.queue, q.pending]),
    [
      [QUEUE, ORDERS + ODD.length],
      [OTHER, 2],
    ],
  );
  same(
    "timers: the queues are the API's (pending, next deadline)",
    await shownQueues(page),
    queues.map((q) => [q.queue, q.pending, q.nextDeliverAt]),
  );
  check(
    'timers: the next deadline is said as about an hour away',
    /^in (59 min|1 h)$/.test(
      await page.$eval(`tr[data-queue="${QUEUE}"] [data-col=in]`, (e) => e.textContent),
    ),
  );

  // A queue's timers, opened from its row with Enter.
  await page.focus(`tr[data-queue="${QUEUE}"]`);
  await page.keyboard.press('Enter');
  await page.waitForFunction((q) => location.hash === `#/timers?queue=${q}`, QUEUE);
  await page.waitForSelector('[data-testid=timers-table] tbody tr');
  const first = await pageOf(b);
  same('timers: the API cuts the queue at 100', [first.rows.length, first.truncated], [100, true]);
  same(
    'timers: the first page is the odd keys, then the orders, in key order',
    first.rows.slice(0, 3).map((r) => r.timerKey),
    [ODD[0], ODD[1], order(0)],
  );
  check(
    "timers: the first page is the API's",
    await showsKeys(
      page,
      'timers-table',
      first.rows.map((r) => r.timerKey),
    ),
  );
  same("timers: its rows are the API's", await shownRows(page), expected(first.rows));
  check(
    'timers: a deadline is said as how far away',
    /^in (59 min|1 h( 1 min)?)$/.test(
      await page.$eval(`${row(order(0))} [data-col=in]`, (e) => e.textContent),
    ),
  );
  same(
    'timers: the count says more follow',
    await page.$eval('[data-testid=timers-count]', (e) => [Number(e.dataset.value), e.textContent]),
    [100, '100+ timers'],
  );

  // The next page starts after the API's nextAfter; the first again, and by the keys.
  const second = await pageOf(b, first.nextAfter);
  same('timers: the API has the last 5 after', second.rows.length, ORDERS + ODD.length - 100);
  await keysetPages(page, {
    name: 'timers',
    id: 'timers',
    table: 'timers-table',
    nextAfter: first.nextAfter,
    first: first.rows.map((r) => r.timerKey),
    second: second.rows.map((r) => r.timerKey),
    onSecond: async () =>
      same("timers: its rows are the API's", await shownRows(page), expected(second.rows)),
  });

  // Peeks: the payload decoded and pretty-printed, keys with `/`, dots and `?#%` included.
  same(
    "timers: a peek shows the payload, pretty-printed, as the API's peek has it",
    await peek(page, order(1)),
    JSON.stringify(
      JSON.parse(Buffer.from((await peekOf(b, order(1))).payload, 'base64').toString('utf8')),
      null,
      2,
    ),
  );
  same(
    'timers: the peek names the partition and refused fires',
    [
      await page.textContent('[data-testid=peek-partition]'),
      await page.textContent('[data-testid=peek-attempts]'),
    ],
    ['Default', '0'],
  );
  same(
    'timers: a key with `/` and `..` is peeked whole, its text decoded as UTF-8',
    await peek(page, ODD[0]),
    JSON.stringify({ name: 'é ✓', nested: { list: [1, 2] } }, null, 2),
  );
  same(
    'timers: one peek at a time',
    await page.$$eval('tr.timer-peek', (r) => r.map((t) => t.dataset.peek)),
    [ODD[0]],
  );
  await shoot(page, 'timers.png');
  same(
    'timers: a key with `?#%` is peeked whole, a string payload stays quoted',
    await peek(page, ODD[1]),
    '"a string"',
  );
  await page.click(`${row(ODD[1])} [data-testid=timer-peek]`);
  await page.waitForSelector('tr.timer-peek', { state: 'detached' });
  await page.focus(row(order(2)));
  await page.keyboard.press('Enter');
  await page.waitForSelector(`tr[data-peek="${order(2)}"] [data-testid=peek-payload]`);
  check('timers: Enter peeks at the focused row', true);

  // A cancel, asked and confirmed: the timer is gone from the broker and the page.
  await askFrom(page, `${row(order(3))} [data-testid=timer-cancel]`);
  same(
    'timers: the question names the txn the cancel is fenced by',
    await page.textContent('[data-testid=confirm-txn]'),
    'timer-3',
  );
  await confirmed(page, 'timers', 'cancelled');
  same(
    'timers: the cancelled timer is gone from the broker',
    (await peekOf(b, order(3))).found,
    false,
  );
  check(
    'timers: and from the page',
    await becomes(page, (sel) => !document.querySelector(sel), row(order(3))),
  );

  // Cancelled (the Delete key, then Escape): nothing is cancelled.
  await backedOut(page, row(order(4)));
  same('timers: a cancel backed out of cancels nothing', (await peekOf(b, order(4))).found, true);

  // A key with `/`, `..`, `?`, `#` and `%` is cancelled by its own path.
  await askFrom(page, `${row(ODD[1])} [data-testid=timer-cancel]`);
  await confirmed(page, 'timers', 'cancelled');
  same(
    'timers: an odd key is cancelled, the other kept',
    [(await peekOf(b, ODD[1])).found, (await peekOf(b, ODD[0])).found],
    [false, true],
  );

  // Rescheduled while the question is open: the fenced cancel leaves the new timer.
  await askFrom(page, `${row(order(5))} [data-testid=timer-cancel]`);
  await timers(b, [
    { ...schedule(QUEUE, order(5), { n: 5, again: true }, 2 * HOUR, 'timer-5b'), op: 'reschedule' },
  ]);
  await confirmed(page, 'timers', 'absent');
  const kept = await peekOf(b, order(5));
  same(
    'timers: a timer rescheduled since it was shown is not cancelled',
    [kept.found, kept.txn],
    [true, 'timer-5b'],
  );
  check(
    'timers: the page says nothing was cancelled, and shows the new txn',
    (await page.textContent('[data-testid=timers-result]')).includes('Nothing was cancelled') &&
      (await becomes(
        page,
        (sel) => document.querySelector(`${sel} [data-col=txn]`)?.textContent === 'timer-5b',
        row(order(5)),
      )),
  );

  // The queues again: the count the cancels left.
  await page.click('[data-testid=timers-crumb]');
  await page.waitForFunction(() => location.hash === '#/timers');
  const after = (await call(b, 'GET', '/api/v1/timers')).queues;
  same('timers: the API counts two fewer', after[0].pending, ORDERS + ODD.length - 2);
  check(
    'timers: so does the page',
    await becomes(
      page,
      ([q, n]) =>
        document.querySelector(`tr[data-queue="${q}"] [data-col=pending]`)?.dataset.value ===
        String(n),
      [QUEUE, after[0].pending],
    ),
  );

  // A queue without timers.
  await open(page, b, '#/timers?queue=console-timers-none');
  await page.waitForSelector('[data-testid=empty]');
  same(
    'timers: a queue without timers is empty, as in the API',
    (await pageOf(b, '', undefined, 'console-timers-none')).rows,
    [],
  );
  same('timers: no console errors', errors, []);
  await context.close();
}

export async function authenticated({ browser, b, tokens }) {
  await make(b, tokens.admin);
  const hash = `#/timers?queue=${QUEUE}`;

  // Read-only: the tab, the queues, the timers and their payloads, but no Cancel.
  const ro = await watchedAs(browser, tokens['read-only']);
  await open(ro.page, b, '');
  await ro.page.waitForSelector('[data-testid=session][data-role=read-only]');
  await ro.page.click('.tabs a:text("Timers")');
  await ro.page.waitForFunction(() => location.hash === '#/timers');
  await ro.page.waitForSelector('[data-testid=timer-queues] tbody tr');
  const queues = (await call(b, 'GET', '/api/v1/timers', null, tokens['read-only'])).queues;
  same(
    "timers (read-only): the queues are the API's",
    await shownQueues(ro.page),
    queues.map((q) => [q.queue, q.pending, q.nextDeliverAt]),
  );
  await open(ro.page, b, hash);
  await ro.page.waitForSelector('[data-testid=timers-table] tbody tr');
  const first = await pageOf(b, '', tokens['read-only']);
  same(
    "timers (read-only): the timers are the API's",
    await shownRows(ro.page),
    expected(first.rows),
  );
  same(
    'timers (read-only): no Cancel',
    await ro.page.$$eval('[data-testid=timer-cancel]', (l) => l.length),
    0,
  );
  await ro.page.focus(row(order(0)));
  await ro.page.keyboard.press('Delete');
  check(
    'timers (read-only): Delete asks nothing',
    !(await becomes(ro.page, () => !!document.querySelector('dialog[open]'), null, 500)),
  );
  same(
    'timers (read-only): a peek shows the payload',
    await peek(ro.page, order(0)),
    JSON.stringify({ n: 0, tags: ['a', 0] }, null, 2),
  );
  same(
    'timers (read-only): the broker refuses the cancel to that token',
    await status(
      b,
      'DELETE',
      `/api/v1/timers/${QUEUE}/${enc(order(0))}?txn=timer-0`,
      null,
      tokens['read-only'],
    ),
    403,
  );
  same('timers (read-only): no console errors', ro.errors, []);
  await ro.context.close();

  // Read-write: Cancel, and it cancels.
  const rw = await watchedAs(browser, tokens['read-write']);
  await open(rw.page, b, hash);
  await rw.page.waitForSelector('[data-testid=timers-table] tbody tr');
  same(
    'timers (read-write): a Cancel on every row',
    await rw.page.$$eval('[data-testid=timer-cancel]', (l) => l.length),
    100,
  );
  await askFrom(rw.page, `${row(order(0))} [data-testid=timer-cancel]`);
  await confirmed(rw.page, 'timers', 'cancelled');
  same(
    'timers (read-write): the timer is gone from the broker',
    (await peekOf(b, order(0), tokens.admin)).found,
    false,
  );
  same('timers (read-write): no console errors', rw.errors, []);
  await rw.context.close();

  // Another tenant: none of acme's timers.
  const other = await watchedAs(browser, tokens.other);
  await open(other.page, b, '#/timers');
  await other.page.waitForSelector('[data-testid=empty]');
  same(
    "timers (second tenant): none of acme's queues",
    await other.page.$eval('[data-testid=empty] h2', (e) => e.textContent),
    'No pending timers',
  );
  same(
    'timers (second tenant): the API agrees',
    (await call(b, 'GET', '/api/v1/timers', null, tokens.other)).queues,
    [],
  );
  await open(other.page, b, hash);
  await other.page.waitForSelector('[data-testid=empty]');
  same(
    "timers (second tenant): none of acme's timers, as in the API",
    (await pageOf(b, '', tokens.other)).rows,
    [],
  );
  same('timers (second tenant): no console errors', other.errors, []);
  await other.context.close();
}
