// The dead-letter page: its list and total are the API's for a queue and a reason (over
// pages too), and its actions act: a requeue of one brings the message back to a consumer,
// a selection delete removes exactly those, a filter-wide requeue asks with the API's
// dry-run count. With a read-only token it lists but offers nothing, and the broker
// refuses that token anyway.
import { call, check, ids, open, same, shoot, status, watched } from './harness.js';

/** Pushes `n` messages to `queue` over two partitions, then dead-letters every one. */
async function deadLetters(b, queue, n, reasons, token) {
  const items = [];
  for (let i = 0; i < n; i++)
    items.push({ queue, partition: `p${i % 2}`, payload: { queue, i, note: `letter ${i}` } });
  await call(b, 'POST', '/api/v1/push', { items }, token);
  // One message a pop: a `dlq` ack ends the lease, so the rest of a batch would be refused.
  let filed = 0;
  for (let round = 0; round < 4 * n && filed < n; round++) {
    const popped = await call(
      b,
      'GET',
      `/api/v1/pop/queue/${queue}?batch=1&wait=false`,
      null,
      token,
    );
    for (const m of popped.messages || []) {
      const error = reasons[filed % reasons.length];
      const [acked] = await call(
        b,
        'POST',
        '/api/v1/ack',
        { ...ids(m), status: 'dlq', error },
        token,
      );
      if (acked?.success && acked.dlq) filed++;
    }
  }
  if (filed !== n) throw new Error(`dead-lettered ${filed} of ${n} in ${queue}`);
}

async function listed(b, query, token) {
  return call(b, 'GET', `/api/v1/dlq?${query}&limit=1000`, null, token);
}

/** A payload with its keys sorted: the listing and pop may order an object's keys apart. */
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canon(v[k])]),
    );
  return v;
}

/** The dead-letter ids of the rows shown, in order, once the table has settled. */
async function rowIds(page) {
  await page.waitForSelector('[data-testid=dlq-table] tbody tr, [data-testid=empty]');
  return page.$$eval('tbody tr[data-dlq]', (rows) => rows.map((r) => Number(r.dataset.dlq)));
}

/** Waits until the rows shown are `want` (ids, in order); answers whether they became so. */
async function rowsBecome(page, want) {
  return page
    .waitForFunction(
      (w) =>
        JSON.stringify(
          [...document.querySelectorAll('tbody tr[data-dlq]')].map((r) => Number(r.dataset.dlq)),
        ) === JSON.stringify(w),
      want,
      { timeout: 5000 },
    )
    .then(
      () => true,
      () => false,
    );
}

async function confirm(page) {
  await page.waitForSelector('dialog[open][data-testid=confirm]');
  await page.click('[data-testid=confirm-action]');
  await page.waitForSelector('dialog[open][data-testid=confirm]', { state: 'detached' });
}

export async function anonymous({ browser, b }) {
  await deadLetters(b, 'dlq-alpha', 6, ['timeout', 'bad payload', 'boom']);
  await deadLetters(b, 'dlq-beta', 5, ['timeout', 'rejected']);
  const { context, page, errors } = await watched(browser);

  // The queue filter, typed into the form.
  await open(page, b, '#/dlq');
  await page.waitForSelector('[data-testid=dlq-table]');
  await page.keyboard.press('/');
  check(
    'dlq: `/` focuses the filter',
    await page.$eval('[data-testid=dlq-filter-queue]', (e) => e === document.activeElement),
  );
  await page.keyboard.type('dlq-alpha');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash.includes('queue=dlq-alpha'));
  const api = await listed(b, 'queue=dlq-alpha');
  check(
    "dlq: a queue filter lists exactly the API's dead letters, newest first",
    await rowsBecome(
      page,
      api.messages.map((d) => d.deadLetterId),
    ),
    JSON.stringify(await rowIds(page)),
  );
  same(
    "dlq: the total is the API's for the queue",
    await page.$eval('[data-testid=dlq-total]', (e) => Number(e.dataset.value)),
    api.total,
  );

  // The reason filter, applied by the broker: the rows and the total are its answer's.
  await page.fill('[data-testid=dlq-filter-reason]', 'timeout');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash.includes('reason=timeout'));
  const timeouts = await listed(b, 'queue=dlq-alpha&reason=timeout');
  check(
    "dlq: a reason filter lists the API's dead letters with that reason",
    timeouts.total > 0 &&
      timeouts.total < api.total &&
      (await rowsBecome(
        page,
        timeouts.messages.map((d) => d.deadLetterId),
      )),
    JSON.stringify(await rowIds(page)),
  );
  same(
    "dlq: the total with a reason is the API's",
    await page.$eval('[data-testid=dlq-total]', (e) => Number(e.dataset.value)),
    timeouts.total,
  );

  // Requeue one: the message comes back to a consumer.
  await open(page, b, '#/dlq?queue=dlq-alpha');
  await rowsBecome(
    page,
    api.messages.map((d) => d.deadLetterId),
  );
  await shoot(page, 'dlq.png');
  const one = api.messages[0];
  await page.click(`tr[data-dlq="${one.deadLetterId}"] [data-testid=dlq-requeue-one]`);
  same(
    'dlq: the requeue asks about one dead letter',
    await page.$eval('[data-testid=confirm-count]', (e) => Number(e.dataset.value)),
    1,
  );
  await confirm(page);
  await page.waitForSelector('[data-testid=dlq-result]');
  same(
    'dlq: the page says it was requeued',
    await page.$eval('[data-testid=dlq-result]', (e) => e.dataset.requeued),
    '1',
  );
  const back = await call(b, 'GET', '/api/v1/pop/queue/dlq-alpha?wait=false');
  same(
    'dlq: a requeue from the page brings the message back to a consumer',
    back.messages?.map((m) => canon(m.data)),
    [canon(one.data)],
  );
  if (back.messages?.length)
    await call(b, 'POST', '/api/v1/ack', { ...ids(back.messages[0]), status: 'completed' });
  const afterOne = await listed(b, 'queue=dlq-alpha');
  check(
    'dlq: the requeued dead letter is gone from the API',
    afterOne.total === api.total - 1 &&
      !afterOne.messages.some((d) => d.deadLetterId === one.deadLetterId),
    `total ${afterOne.total}`,
  );
  check(
    'dlq: the page reloads without it',
    await rowsBecome(
      page,
      afterOne.messages.map((d) => d.deadLetterId),
    ),
  );

  // The select-all box, then a selection made from the keyboard, deleted.
  await page.click('[data-testid=dlq-select-page]');
  same(
    'dlq: the select-all box selects the page',
    await page.$eval('[data-testid=dlq-selected]', (e) => Number(e.dataset.value)),
    afterOne.messages.length,
  );
  await page.click('[data-testid=dlq-select-page]');
  same(
    'dlq: and clears it',
    await page.$eval('[data-testid=dlq-selected]', (e) => Number(e.dataset.value)),
    0,
  );
  await page.focus('tbody tr[data-dlq]');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press(' ');
  await page.keyboard.press('j');
  await page.keyboard.press(' ');
  const chosen = [afterOne.messages[1].deadLetterId, afterOne.messages[2].deadLetterId];
  same(
    'dlq: space selects the focused rows',
    await page.$$eval('tbody tr[aria-selected=true]', (rows) =>
      rows.map((r) => Number(r.dataset.dlq)),
    ),
    chosen,
  );
  await page.click('[data-testid=dlq-delete-selected]');
  same(
    'dlq: the delete asks about the selection',
    await page.$eval('[data-testid=confirm-count]', (e) => Number(e.dataset.value)),
    2,
  );
  await confirm(page);
  await page.waitForSelector('[data-testid=dlq-result]');
  const afterDelete = await listed(b, 'queue=dlq-alpha');
  same(
    'dlq: a selection delete removes exactly those',
    afterDelete.messages.map((d) => d.deadLetterId),
    afterOne.messages.map((d) => d.deadLetterId).filter((id) => !chosen.includes(id)),
  );
  same(
    'dlq: the page says two were deleted',
    await page.$eval('[data-testid=dlq-result]', (e) => e.dataset.deleted),
    '2',
  );

  // Everything matching a filter (queue and reason): the dry run's count first.
  const filter = { queue: 'dlq-beta', reason: 'timeout' };
  const dry = await call(b, 'POST', '/api/v1/dlq/requeue', { ...filter, dryRun: true });
  await open(page, b, '#/dlq?queue=dlq-beta&reason=timeout');
  await page.waitForSelector('[data-testid=dlq-table]');
  await page.click('[data-testid=dlq-requeue-filter]');
  await page.waitForSelector('dialog[open][data-testid=confirm]');
  same(
    "dlq: a filter-wide requeue asks with the API's dry-run count",
    await page.$eval('[data-testid=confirm-count]', (e) => Number(e.dataset.value)),
    dry.matched,
  );
  check(
    'dlq: the question names the filter',
    (await page.textContent('[data-testid=confirm]')).includes('reason “timeout”'),
  );
  const before = await listed(b, 'queue=dlq-beta');
  await confirm(page);
  await page.waitForSelector('[data-testid=dlq-result]');
  const after = await listed(b, 'queue=dlq-beta');
  same(
    'dlq: the filter-wide requeue took exactly the matching dead letters',
    after.messages.map((d) => d.deadLetterId),
    before.messages.filter((d) => d.errorMessage !== 'timeout').map((d) => d.deadLetterId),
  );
  same(
    'dlq: the page says how many were requeued',
    await page.$eval('[data-testid=dlq-result]', (e) => Number(e.dataset.requeued)),
    dry.requeued,
  );
  // More than a page: 50 a page, the rest on the next.
  await deadLetters(b, 'dlq-many', 55, ['overflow']);
  const first = await call(b, 'GET', '/api/v1/dlq?queue=dlq-many&limit=50&offset=0');
  const second = await call(b, 'GET', '/api/v1/dlq?queue=dlq-many&limit=50&offset=50');
  await open(page, b, '#/dlq?queue=dlq-many');
  check(
    "dlq: the first page is the API's first 50",
    await rowsBecome(
      page,
      first.messages.map((d) => d.deadLetterId),
    ),
  );
  same(
    'dlq: the pager counts the pages from the total',
    await page.textContent('[data-testid=page]'),
    `Page 1 of ${Math.ceil(first.total / 50)}`,
  );
  // Page keys are ignored while typing in a field, and the filter field of an earlier step
  // may still hold the focus.
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press(']');
  await page.waitForFunction(() => location.hash.includes('page=2'));
  check(
    "dlq: `]` turns to the API's next page",
    await rowsBecome(
      page,
      second.messages.map((d) => d.deadLetterId),
    ),
  );

  // The time range, from the URL into the broker's query and the form.
  const middle = first.messages[9].failedAt;
  const since = await listed(b, `queue=dlq-many&from=${encodeURIComponent(middle)}`);
  await open(page, b, `#/dlq?queue=dlq-many&from=${encodeURIComponent(middle)}`);
  check(
    "dlq: a time filter lists the API's dead letters failed since then",
    since.total > 0 &&
      since.total < first.total &&
      (await rowsBecome(
        page,
        since.messages.map((d) => d.deadLetterId),
      )),
  );
  same(
    'dlq: the form shows the instant in local time',
    await page.$eval('[data-testid=dlq-filter-from]', (e) => new Date(e.value).getTime()),
    Math.floor(Date.parse(middle) / 1000) * 1000,
  );
  // A reason over more than a page, mixed with another: the broker's pages of it.
  await deadLetters(b, 'dlq-mixed', 78, ['spill', 'spill', 'other']);
  const spill = 'queue=dlq-mixed&reason=spill&limit=50';
  const spill1 = await call(b, 'GET', `/api/v1/dlq?${spill}&offset=0`);
  const spill2 = await call(b, 'GET', `/api/v1/dlq?${spill}&offset=50`);
  check(
    'dlq: the API has more than a page of the reason',
    spill1.total > 50 && spill2.messages.length === spill1.total - 50,
    `${spill1.total}`,
  );
  await open(page, b, '#/dlq?queue=dlq-mixed&reason=spill');
  check(
    "dlq: a reason's first page is the API's",
    await rowsBecome(
      page,
      spill1.messages.map((d) => d.deadLetterId),
    ),
    JSON.stringify(await rowIds(page)),
  );
  same(
    "dlq: the reason's total is the API's",
    await page.$eval('[data-testid=dlq-total]', (e) => Number(e.dataset.value)),
    spill1.total,
  );
  // Page keys are ignored while typing in a field, and the filter field of an earlier step
  // may still hold the focus.
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press(']');
  await page.waitForFunction(() => location.hash.includes('page=2'));
  check(
    "dlq: and its second page is the API's",
    await rowsBecome(
      page,
      spill2.messages.map((d) => d.deadLetterId),
    ),
    JSON.stringify(await rowIds(page)),
  );
  same('dlq: no console errors', errors, []);
  await context.close();
}

export async function authenticated({ browser, b, tokens }) {
  await deadLetters(b, 'dlq-ro', 3, ['expired card'], tokens.admin);
  const api = await listed(b, 'queue=dlq-ro', tokens['read-only']);
  const { context, page, errors } = await watched(browser);
  await page.addInitScript((t) => sessionStorage.setItem('regent.token', t), tokens['read-only']);
  await open(page, b, '#/dlq?queue=dlq-ro');
  await page.waitForSelector('[data-testid=session][data-role=read-only]');
  check(
    "dlq (read-only): the dead letters are the API's",
    api.total === 3 &&
      (await rowsBecome(
        page,
        api.messages.map((d) => d.deadLetterId),
      )),
  );
  same(
    'dlq (read-only): no requeue, delete or selection is offered',
    await page.$$eval(
      '[data-testid^=dlq-requeue], [data-testid^=dlq-delete], [data-testid=dlq-select-page], tbody input[type=checkbox]',
      (els) => els.length,
    ),
    0,
  );
  await page.focus('tbody tr[data-dlq]');
  await page.keyboard.press('r');
  check(
    'dlq (read-only): the requeue key asks nothing',
    (await page.$('dialog[open][data-testid=confirm]')) === null,
  );
  check(
    'dlq (read-only): the page says why',
    (await page.$('[data-testid=dlq-read-only]')) !== null,
  );
  same(
    'dlq (read-only): the broker refuses a requeue with that token',
    await status(
      b,
      'POST',
      '/api/v1/dlq/requeue',
      { ids: [api.messages[0].deadLetterId] },
      tokens['read-only'],
    ),
    403,
  );
  same(
    'dlq (read-only): the refused requeue moved nothing',
    (await listed(b, 'queue=dlq-ro', tokens.admin)).total,
    3,
  );
  same('dlq (read-only): no console errors', errors, []);
  await context.close();
}
