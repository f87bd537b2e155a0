// The consumer-group pages: the list's lags are the API's, its name filter is the broker's
// search (over pages too), the group's cursors are the API's, and the page's actions move
// them: a seek to the end leaves nothing to read, a seek to an instant replays, a partition
// seek moves that one, deletes leave `{}`. With a read-only token nothing is offered and the
// broker refuses the seek; a read-write one may seek but is not offered deletes.
import { call, check, ids, open, same, shoot, status, watched } from './harness.js';

const QUEUE = 'grp-orders';

/** Pushes `perPartition` messages to each of two partitions of `queue`. */
async function backlog(b, queue, perPartition, token) {
  const items = [];
  for (let i = 0; i < perPartition; i++)
    for (const partition of ['p0', 'p1']) items.push({ queue, partition, payload: { i } });
  await call(b, 'POST', '/api/v1/push', { items }, token);
}

/** `group` pops one message from each partition of `queue`, acking them if `ack`. */
async function consumeOne(b, queue, group, ack, token) {
  for (let i = 0; i < 2; i++) {
    const popped = await call(
      b,
      'GET',
      `/api/v1/pop/queue/${queue}?batch=1&wait=false&consumerGroup=${group}`,
      null,
      token,
    );
    for (const m of popped.messages || [])
      if (ack)
        await call(
          b,
          'POST',
          '/api/v1/ack',
          { ...ids(m), status: 'completed', consumerGroup: group },
          token,
        );
  }
}

async function cursors(b, group, token) {
  return call(b, 'GET', `/api/v1/consumer-groups/${group}`, null, token);
}

/** The API's offset lag per partition of `queue` for a group: `{p0: 2, p1: 2}`. */
function lags(detail, queue) {
  return Object.fromEntries(
    (detail[queue]?.partitions || []).map((p) => [p.partition, p.offsetLag]),
  );
}

async function pageLags(page, queue) {
  return page.$$eval(`[data-testid=group-queue][data-queue="${queue}"] tbody tr`, (rows) =>
    Object.fromEntries(
      rows.map((r) => [
        r.dataset.partition,
        Number(r.querySelector('[data-col=lag]').dataset.value),
      ]),
    ),
  );
}

/** Waits until the page's lags for `queue` are `want`; answers whether they became so. */
async function lagsBecome(page, queue, want) {
  return page
    .waitForFunction(
      ([q, w]) => {
        const rows = document.querySelectorAll(
          `[data-testid=group-queue][data-queue="${q}"] tbody tr`,
        );
        const got = Object.fromEntries(
          [...rows].map((r) => [
            r.dataset.partition,
            Number(r.querySelector('[data-col=lag]').dataset.value),
          ]),
        );
        return JSON.stringify(got) === JSON.stringify(w);
      },
      [queue, want],
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

const CROWD = 'grp-crowd-';
const key = (g) => `${g.name}/${g.queueName}`;

/** `n` groups named `prefix`NN, each with a cursor on a queue of its own name. */
async function crowd(b, prefix, n) {
  const queue = `${prefix}q`;
  await call(b, 'POST', '/api/v1/push', { items: [{ queue, payload: 1 }] });
  for (let i = 0; i < n; i++)
    await consumeOne(b, queue, `${prefix}${String(i).padStart(2, '0')}`, true);
  await call(b, 'POST', '/api/v1/stats/refresh', {});
}

/** The (group/queue) rows shown, in order. */
async function rows(page) {
  return page.$$eval('tbody tr[data-group]', (r) =>
    r.map((e) => `${e.dataset.group}/${e.dataset.queue}`),
  );
}

/** Waits until the rows shown are `want`; answers whether they became so. */
async function rowsBecome(page, want) {
  return page
    .waitForFunction(
      (w) =>
        JSON.stringify(
          [...document.querySelectorAll('tbody tr[data-group]')].map(
            (r) => `${r.dataset.group}/${r.dataset.queue}`,
          ),
        ) === JSON.stringify(w),
      want,
      { timeout: 5000 },
    )
    .then(
      () => true,
      () => false,
    );
}

/** The listing's element for (group, queue), as the API answers it. */
async function listed(b, group, queue, token) {
  const all = await call(b, 'GET', '/api/v1/consumer-groups?limit=1000', null, token);
  return all.find((g) => g.name === group && g.queueName === queue);
}

async function rowOf(page, group, queue) {
  const sel = `tr[data-group="${group}"][data-queue="${queue}"]`;
  await page.waitForSelector(sel);
  return page.$eval(sel, (tr) => ({
    partitions: Number(tr.querySelector('[data-col=partitions]').dataset.value),
    withLag: Number(tr.querySelector('[data-col=with-lag]').dataset.value),
    lag: Number(tr.querySelector('[data-col=lag]').dataset.value),
    state: tr.querySelector('[data-col=state]').textContent,
  }));
}

export async function anonymous({ browser, b }) {
  // A local instant before anything is pushed: the replay goes back to it.
  const start = new Date(Date.now() - 60000);
  await backlog(b, QUEUE, 3);
  await consumeOne(b, QUEUE, 'grp-billing', true);
  await consumeOne(b, QUEUE, 'grp-audit', true);
  await call(b, 'POST', '/api/v1/stats/refresh', {});
  const { context, page, errors } = await watched(browser);

  // Filtered to the group: the queues other tests pushed and nobody read are listed under
  // queue mode, which sorts before it.
  await open(page, b, '#/groups?search=grp-billing');
  const api = await listed(b, 'grp-billing', QUEUE);
  check('groups: the API lists the group with lag', api?.totalLag > 0, JSON.stringify(api));
  same(
    "groups: the list's partitions, lag and state are the API's",
    await rowOf(page, 'grp-billing', QUEUE),
    {
      partitions: api.members,
      withLag: api.partitionsWithLag,
      lag: api.totalLag,
      state: api.state,
    },
  );
  await shoot(page, 'groups.png');

  // The name filter, applied by the broker: more groups match than a page holds, and the
  // listing before them (grp-audit, grp-billing) would push them off a client's page.
  await crowd(b, CROWD, 55);
  await page.keyboard.press('/');
  await page.keyboard.press('Control+A');
  await page.keyboard.type(CROWD);
  await page.waitForFunction((c) => location.hash.includes(`search=${c}`), CROWD);
  const found = `/api/v1/consumer-groups?search=${CROWD}&limit=50`;
  const first = await call(b, 'GET', `${found}&offset=0`);
  const second = await call(b, 'GET', `${found}&offset=50`);
  check(
    'groups: the API has more than a page of matching groups',
    first.length === 50 && second.length > 0 && first.every((g) => g.name.includes(CROWD)),
  );
  check(
    "groups: the filtered rows are the API's search answer",
    await rowsBecome(page, first.map(key)),
    JSON.stringify(await rows(page)),
  );
  await page.focus('tbody tr[data-group]');
  await page.keyboard.press(']');
  await page.waitForFunction(() => location.hash.includes('page=2'));
  check(
    "groups: and their next page (key ]) is the API's",
    await rowsBecome(page, second.map(key)),
    JSON.stringify(await rows(page)),
  );
  // Back to one group, for its page.
  await open(page, b, '#/groups?search=billing');
  const billing = await call(b, 'GET', '/api/v1/consumer-groups?search=billing&limit=51');
  check(
    "groups: a search for one name is the API's",
    billing.length > 0 && (await rowsBecome(page, billing.map(key))),
    JSON.stringify(await rows(page)),
  );

  // The group's page: its cursors, counted now.
  await page.click('tr[data-group=grp-billing] a');
  await page.waitForFunction(() => location.hash.startsWith('#/group?name=grp-billing'));
  let detail = await cursors(b, 'grp-billing');
  check(
    "group: the cursors' lags are the API's",
    Object.keys(lags(detail, QUEUE)).length === 2 &&
      (await lagsBecome(page, QUEUE, lags(detail, QUEUE))),
    JSON.stringify(await pageLags(page, QUEUE)),
  );
  same(
    "group: the queue's lag is the API's sum",
    await page.$eval(
      `[data-testid=group-queue][data-queue="${QUEUE}"] [data-testid=queue-lag]`,
      (e) => Number(e.dataset.value),
    ),
    Object.values(lags(detail, QUEUE)).reduce((a, b) => a + b, 0),
  );
  same(
    'group: a queue links to its page',
    await page.$eval(`[data-testid=group-queue][data-queue="${QUEUE}"] a`, (a) =>
      a.getAttribute('href'),
    ),
    `#/queue?name=${QUEUE}`,
  );
  await shoot(page, 'group.png');

  // Seek to the end: nothing is left for the group.
  await page.click(`[data-testid=group-queue][data-queue="${QUEUE}"] [data-testid=seek-end]`);
  await confirm(page);
  await page.waitForSelector('[data-testid=group-result]');
  detail = await cursors(b, 'grp-billing');
  same('group: a seek to the end leaves no offset lag (API)', lags(detail, QUEUE), {
    p0: 0,
    p1: 0,
  });
  const popped = await call(
    b,
    'GET',
    `/api/v1/pop/queue/${QUEUE}?batch=10&wait=false&consumerGroup=grp-billing`,
  );
  same('group: and a pop by the group finds nothing', popped.messages.length, 0);
  check('group: the page shows it', await lagsBecome(page, QUEUE, { p0: 0, p1: 0 }));

  // Seek back to an instant before the pushes: everything is there again.
  const local = await page.evaluate((ms) => {
    const d = new Date(ms);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }, start.getTime());
  await page.fill(`[data-testid=group-queue][data-queue="${QUEUE}"] [data-testid=seek-at]`, local);
  await page.click(`[data-testid=group-queue][data-queue="${QUEUE}"] [data-testid=seek-time]`);
  check(
    'group: the question names the instant',
    (await page.textContent('[data-testid=confirm]')).includes(start.toISOString().slice(0, 19)),
  );
  await confirm(page);
  await page.waitForSelector('[data-testid=group-result]');
  detail = await cursors(b, 'grp-billing');
  same('group: a seek to an instant replays (API lag again)', lags(detail, QUEUE), {
    p0: 3,
    p1: 3,
  });
  check('group: the page shows the replay', await lagsBecome(page, QUEUE, lags(detail, QUEUE)));

  // One partition to its end.
  await page.click(`tr[data-partition=p0] [data-testid=seek-partition]`);
  await confirm(page);
  await page.waitForSelector('[data-testid=group-result]');
  same(
    'group: a partition seek moves that partition only (API)',
    lags(await cursors(b, 'grp-billing'), QUEUE),
    { p0: 0, p1: 3 },
  );

  // Delete the group, then the other group's cursors on the queue.
  await page.click('[data-testid=delete-group]');
  await confirm(page);
  await page.waitForSelector('[data-testid=empty]');
  same('group: delete removes the group (API answers {})', await cursors(b, 'grp-billing'), {});
  await open(page, b, '#/group?name=grp-audit');
  await page.waitForSelector(`[data-testid=group-queue][data-queue="${QUEUE}"]`);
  await page.click(`[data-testid=group-queue][data-queue="${QUEUE}"] [data-testid=delete-queue]`);
  await confirm(page);
  await page.waitForSelector('[data-testid=empty]');
  same(
    "group: deleting a queue's cursors removes them (API answers {})",
    await cursors(b, 'grp-audit'),
    {},
  );
  same('groups: no console errors', errors, []);
  await context.close();
}

/** A page with the token of `role` in the tab, as the token form would leave it. */
async function as(browser, tokens, role) {
  const w = await watched(browser);
  await w.page.addInitScript((t) => sessionStorage.setItem('regent.token', t), tokens[role]);
  return w;
}

export async function authenticated({ browser, b, tokens }) {
  await backlog(b, 'grp-ro', 3, tokens.admin);
  await consumeOne(b, 'grp-ro', 'grp-ro-g', true, tokens.admin);
  await call(b, 'POST', '/api/v1/stats/refresh', {}, tokens.admin);
  const ro = tokens['read-only'];

  const { context, page, errors } = await as(browser, tokens, 'read-only');
  await open(page, b, '#/groups?search=grp-ro-g');
  await page.waitForSelector('[data-testid=session][data-role=read-only]');
  const api = await listed(b, 'grp-ro-g', 'grp-ro', ro);
  same(
    "groups (read-only): the list's lag is the API's",
    (await rowOf(page, 'grp-ro-g', 'grp-ro')).lag,
    api?.totalLag,
  );
  await open(page, b, '#/group?name=grp-ro-g');
  await page.waitForSelector('[data-testid=session][data-role=read-only]');
  const detail = await cursors(b, 'grp-ro-g', ro);
  check(
    "group (read-only): the cursors are the API's",
    await lagsBecome(page, 'grp-ro', lags(detail, 'grp-ro')),
  );
  same(
    'group (read-only): no seek or delete is offered',
    await page.$$eval('[data-testid^=seek], [data-testid^=delete]', (els) => els.length),
    0,
  );
  same(
    'group (read-only): the broker refuses a seek with that token',
    await status(
      b,
      'POST',
      '/api/v1/consumer-groups/grp-ro-g/queues/grp-ro/seek',
      { toEnd: true },
      ro,
    ),
    403,
  );
  same('group (read-only): no console errors', errors, []);
  await context.close();

  const rw = await as(browser, tokens, 'read-write');
  await open(rw.page, b, '#/group?name=grp-ro-g');
  await rw.page.waitForSelector('[data-testid=session][data-role=read-write]');
  await rw.page.waitForSelector('[data-testid=group-queue]');
  same(
    'group (read-write): seeks are offered, deletes (admin) are not',
    [
      (await rw.page.$$('[data-testid=seek-end]')).length,
      (await rw.page.$$('[data-testid^=delete]')).length,
    ],
    [1, 0],
  );
  same(
    'group (read-write): the broker refuses a delete with that token',
    await status(b, 'DELETE', '/api/v1/consumer-groups/grp-ro-g', undefined, tokens['read-write']),
    403,
  );
  same('group (read-write): no console errors', rw.errors, []);
  await rw.context.close();
}
