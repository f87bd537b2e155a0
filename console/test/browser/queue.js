// One queue's page: its totals, partition pages and deepest partitions are the API's; its
// consumer groups (paged by the broker) and its depth chart's newest levels are the API's,
// and the depth follows a stats round; the configuration form configures every option (an
// edit keeps the others, and shows the broker's refusal); clear and delete really act,
// after a confirmation; a read-only or read-write token is not offered what it may not do.
import { becomes, call, check, ids, open, same, shoot, value, watched } from './harness.js';

const Q = 'qd-wide';
const GROUP = 'qd-g1';
const PARTITIONS = 120;
// A few partitions get more messages than the others, so depths differ.
const EXTRA = { p007: 5, p042: 3, p100: 8, p119: 2 };
const enc = encodeURIComponent;

const rowsOf = (page, table) =>
  page.$$eval(`[data-testid=${table}] tbody tr`, (rows) => rows.map((r) => r.dataset.partition));

async function queueAnswer(b, query, token) {
  return call(b, 'GET', `/api/v1/resources/queues/${enc(Q)}?${query}`, null, token);
}

async function queueStatus(b, name = Q) {
  return call(b, 'GET', `/api/v1/status?queue=${enc(name)}`);
}

const sorted = (entries) => Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : 1)));

const groupRows = (page) =>
  page.$$eval('[data-testid=groups-table] tbody tr', (r) => r.map((e) => e.dataset.group));

/** `group` pops up to `n` messages of the queue and acks them; answers how many. */
async function consume(b, group, n) {
  const popped = await call(
    b,
    'GET',
    `/api/v1/pop/queue/${Q}?batch=${n}&wait=false&consumerGroup=${group}`,
  );
  for (const m of popped.messages)
    await call(b, 'POST', '/api/v1/ack', { ...ids(m), status: 'completed', consumerGroup: group });
  return popped.messages.length;
}

/**
 * Options the form once could not read (it left them blank, so a save reset them): after
 * a save that changes only the retry limit, the API has every other one as it was.
 */
async function configured(page, b) {
  const name = 'qd-config';
  await call(b, 'POST', '/api/v1/configure', {
    queue: name,
    namespace: 'qd-ns',
    task: 'qd-task',
    options: {
      delayedProcessing: 2,
      windowBuffer: 3,
      maxWaitTimeSeconds: 40,
      retentionSeconds: 7200,
      completedRetentionSeconds: 600,
      retentionEnabled: true,
      dlqAfterMaxRetries: false,
      priority: 4,
    },
  });
  const before = (await call(b, 'GET', `/api/v1/status/queues/${name}?limit=1`)).queue;
  check(
    'configure: the API keeps the options configured',
    before.options.windowBuffer === 3 && before.options.retentionEnabled === true,
    JSON.stringify(before.options),
  );
  await open(page, b, `#/queue?name=${name}`);
  await page.waitForSelector('[data-testid=config-save]');
  same(
    "configure: the form shows every option as the API's",
    sorted(
      await page.$$eval('[data-testid=config] [id^=cfg-]', (els) =>
        els.map((e) => [e.id.slice(4), e.value]),
      ),
    ),
    sorted([
      ['namespace', before.namespace],
      ['task', before.task],
      ...Object.entries(before.options).map(([k, v]) => [k, v === null ? '' : String(v)]),
    ]),
  );
  const retries = before.options.retryLimit + 2;
  await page.fill('#cfg-retryLimit', String(retries));
  await page.click('[data-testid=config-save]');
  await page.waitForSelector('[data-testid=config-saved]');
  const after = (await call(b, 'GET', `/api/v1/status/queues/${name}?limit=1`)).queue;
  same(
    'configure: a save of the retry limit keeps every other option (API)',
    { options: after.options, namespace: after.namespace, task: after.task },
    {
      options: { ...before.options, retryLimit: retries },
      namespace: before.namespace,
      task: before.task,
    },
  );
}

/** More groups on a queue than a page holds: page 1 and 2 are the broker's `?queue=` pages. */
async function crowded(page, b) {
  const name = 'qd-crowd';
  const many = 53;
  await call(b, 'POST', '/api/v1/push', { items: [{ queue: name, payload: 1 }] });
  for (let i = 0; i < many; i++) {
    const group = `qd-gr-${String(i).padStart(2, '0')}`;
    const popped = await call(
      b,
      'GET',
      `/api/v1/pop/queue/${name}?batch=1&wait=false&consumerGroup=${group}`,
    );
    for (const m of popped.messages)
      await call(b, 'POST', '/api/v1/ack', {
        ...ids(m),
        status: 'completed',
        consumerGroup: group,
      });
  }
  await call(b, 'POST', '/api/v1/stats/refresh', {});
  const path = `/api/v1/consumer-groups?queue=${name}&limit=50`;
  const first = await call(b, 'GET', `${path}&offset=0`);
  const second = await call(b, 'GET', `${path}&offset=50`);
  same('queue: the API pages the groups of the queue', first.length + second.length, many);
  await open(page, b, `#/queue?name=${name}`);
  await page.waitForSelector('[data-testid=groups-table] tbody tr');
  same(
    "queue: the first page of groups is the API's",
    await groupRows(page),
    first.map((g) => g.name),
  );
  await page.click('[data-testid=groups-page-next]');
  await page.waitForFunction(() => location.hash.includes('groupPage=2'));
  check(
    "queue: the next page of groups is the API's",
    await becomes(
      page,
      (want) =>
        JSON.stringify(
          [...document.querySelectorAll('[data-testid=groups-table] tbody tr')].map(
            (e) => e.dataset.group,
          ),
        ) === JSON.stringify(want),
      second.map((g) => g.name),
    ),
    JSON.stringify(await groupRows(page)),
  );
}

async function fillQueue(b, token) {
  const items = [];
  for (let i = 0; i < PARTITIONS; i++) {
    const partition = `p${String(i).padStart(3, '0')}`;
    for (let n = 0; n <= (EXTRA[partition] || 0); n++)
      items.push({ queue: Q, partition, payload: { i, n } });
  }
  await call(b, 'POST', '/api/v1/push', { items }, token);
  // One group reads part of the queue: it has a lag.
  const popped = await call(
    b,
    'GET',
    `/api/v1/pop/queue/${Q}?batch=4&partitions=3&wait=false&consumerGroup=${GROUP}`,
    null,
    token,
  );
  for (const m of popped.messages)
    await call(
      b,
      'POST',
      '/api/v1/ack',
      { ...ids(m), status: 'completed', consumerGroup: GROUP },
      token,
    );
  // The series is flushed every 5 s: wait until it holds every push and ack.
  for (let i = 0; ; i++) {
    const ops = await call(b, 'GET', `/api/v1/analytics/queue-ops?queue=${Q}`, null, token);
    const sum = (k) => ops.queues.reduce((n, q) => n + q[k], 0);
    if (sum('push') === items.length && sum('ack') === popped.messages.length) break;
    if (i > 60) throw new Error('the series never showed the pushes and acks');
    await new Promise((ok) => setTimeout(ok, 250));
  }
  await call(b, 'POST', '/api/v1/stats/refresh', {}, token);
  return { pushed: items.length, acked: popped.messages.length };
}

export async function anonymous({ browser, b }) {
  const filled = await fillQueue(b);
  check('queue: the group acked some messages', filled.acked > 0, `${filled.acked}`);
  await call(b, 'POST', '/api/v1/push', { items: [{ queue: 'qd-doomed', payload: 1 }] });
  await call(b, 'POST', '/api/v1/stats/refresh', {});

  const { context, page, errors } = await watched(browser);
  await open(page, b, `#/queue?name=${Q}`);
  await page.waitForSelector('[data-testid=queue-total]');
  const api = await queueAnswer(b, 'limit=50&offset=0');
  for (const [id, key] of [
    ['queue-total', 'total'],
    ['queue-pending', 'pending'],
    ['queue-processing', 'processing'],
    ['queue-completed', 'completed'],
    ['queue-dead-letters', 'deadLetter'],
  ])
    same(`queue: ${key} is the API's`, await value(page, id), api.totals[key]);
  same(
    "queue: partitions are the API's",
    await value(page, 'queue-partitions'),
    api.pagination.total,
  );
  // The page asked a moment before the test did: the age may have ticked a second on.
  const age = await value(page, 'stats-age');
  check(
    'queue: the stats age is shown',
    age >= 0 && Math.abs(age - api.statsAge) <= 1,
    `${age}, API ${api.statsAge}`,
  );

  // Partition pages, against the API's own pages.
  await page.waitForSelector('[data-testid=partitions-table] tbody tr');
  const first = await rowsOf(page, 'partitions-table');
  same(
    "queue: partition page 1 is the API's",
    first,
    api.partitions.map((p) => p.name),
  );
  same(
    "queue: page 1's pending counts are the API's",
    await page.$$eval('[data-testid=partitions-table] td[data-col=pending]', (c) =>
      c.map((e) => e.textContent),
    ),
    api.partitions.map((p) => String(p.stats.pending)),
  );
  same(
    "queue: the partition total is the API's",
    Number(await page.$eval('[data-testid=partitions-page] [data-total]', (e) => e.dataset.total)),
    PARTITIONS,
  );
  await page.waitForSelector('.chart canvas');
  // Tall enough for the whole page: the partitions, groups and form are the point of it.
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: 1280, height });
  await shoot(page, 'queue.png');
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.keyboard.press(']');
  await page.waitForFunction(() => location.hash.includes('page=2'));
  await page.waitForFunction(
    (name) =>
      document.querySelector('[data-testid=partitions-table] tbody tr')?.dataset.partition !== name,
    first[0],
  );
  const api2 = await queueAnswer(b, 'limit=50&offset=50');
  const second = await rowsOf(page, 'partitions-table');
  same(
    "queue: partition page 2 (key ]) is the API's",
    second,
    api2.partitions.map((p) => p.name),
  );

  // A click on a header sorts this page only, by the column.
  await page.click('[data-testid=partitions-table] button[data-sort=pending]');
  await page.waitForFunction(() => location.hash.includes('sort=-pending'));
  const byPending = [...api2.partitions]
    .map((p, i) => ({ p, i }))
    .sort((x, y) => y.p.stats.pending - x.p.stats.pending || x.i - y.i)
    .map((x) => x.p.name);
  same(
    'queue: the pending header sorts the page, deepest first',
    await rowsOf(page, 'partitions-table'),
    byPending,
  );
  await page.click('[data-testid=partitions-table] button[data-sort=pending]');
  await page.waitForFunction(() => location.hash.includes('sort=pending'));
  same(
    'queue: a second click sorts it the other way',
    (await rowsOf(page, 'partitions-table'))[0],
    [...api2.partitions].sort((x, y) => x.stats.pending - y.stats.pending)[0].name,
  );

  // The whole queue's deepest partitions come from the snapshot's depth route.
  const depth = await call(b, 'GET', `/api/v1/resources/queues/${Q}/depth`);
  await page.click('[data-testid=view-deepest]');
  await page.waitForSelector('[data-testid=deepest-table] tbody tr');
  const deepest = await rowsOf(page, 'deepest-table');
  same(
    "queue: the deepest view's first partition is the depth route's",
    deepest[0],
    depth.partitions[0].partition,
  );
  same(
    "queue: the deepest view lists the depth route's partitions",
    deepest,
    depth.partitions.map((p) => p.partition),
  );

  // Consumer groups: the broker's, filtered by the queue.
  const groups = await call(b, 'GET', `/api/v1/consumer-groups?queue=${enc(Q)}&limit=51`);
  check('queue: the API has a group on the queue', groups.length > 0);
  await page.waitForSelector('[data-testid=groups-table] tbody tr');
  same(
    "queue: the groups are the API's for this queue",
    await groupRows(page),
    groups.map((g) => g.name),
  );
  same(
    "queue: each group's lag is the API's",
    await page.$$eval('[data-testid=groups-table] td[data-col=lag]', (c) =>
      c.map((e) => Number(e.dataset.value)),
    ),
    groups.map((g) => g.totalLag),
  );
  check(
    'queue: a group links to its page',
    (await page.$eval('[data-testid=groups-table] tbody a', (a) => a.getAttribute('href'))) ===
      `#/group?name=${GROUP}`,
  );

  // The depth chart: its newest levels are the stats round's, as the totals.
  const status = await queueStatus(b);
  check('queue: the API has a depth series for the queue', status.depth?.length > 0);
  await page.waitForSelector('[data-testid=depth-chart]');
  same(
    "queue: the depth chart's newest pending is the API's",
    await value(page, 'depth-pending'),
    status.depth[0].pending,
  );
  same(
    "queue: the depth chart's newest pending is the totals' pending",
    await value(page, 'depth-pending'),
    await value(page, 'queue-pending'),
  );
  same(
    "queue: the depth chart's newest lag is the API's",
    await value(page, 'depth-lag'),
    status.depth[0].lagMessages,
  );
  // The group reads more, a round counts it: the chart follows (it refreshes itself).
  const deep = status.depth[0].pending;
  const acked = await consume(b, GROUP, 10);
  await call(b, 'POST', '/api/v1/stats/refresh', {});
  const later = await queueStatus(b);
  same('queue: the API depth fell by what was acked', later.depth[0].pending, deep - acked);
  check(
    'queue: the depth chart follows the next round',
    acked > 0 &&
      (await becomes(
        page,
        (want) =>
          Number(document.querySelector('[data-testid=depth-pending]')?.dataset.value) === want,
        later.depth[0].pending,
        15000,
      )),
    `${await value(page, 'depth-pending')}, want ${later.depth[0].pending}`,
  );
  check(
    'queue: and the totals say the same',
    await becomes(
      page,
      (want) =>
        Number(document.querySelector('[data-testid=queue-pending]')?.dataset.value) === want,
      later.depth[0].pending,
      15000,
    ),
  );

  // Configure from the form: the values typed are the queue's afterwards, nothing else moves.
  const before = (await call(b, 'GET', `/api/v1/status/queues/${Q}?limit=1`)).queue;
  const lease = before.config.leaseTime + 17;
  const retries = before.config.retryLimit + 4;
  await page.waitForSelector('[data-testid=config-save]');
  // The options the broker stores and echoes but does not apply say so (issue 50).
  same(
    'queue: the options stored but not applied are marked so, and only they',
    await page.$$eval('label:has([data-testid=stored-only])', (ls) =>
      ls.map((l) => l.getAttribute('for')),
    ),
    ['cfg-retryDelay', 'cfg-ttl', 'cfg-maxSize'],
  );
  await page.fill('#cfg-leaseTime', String(lease));
  await page.fill('#cfg-retryLimit', String(retries));
  await page.click('[data-testid=config-save]');
  await page.waitForSelector('[data-testid=config-saved]');
  const after = (await call(b, 'GET', `/api/v1/status/queues/${Q}?limit=1`)).queue;
  same('configure: the lease time changed', after.config.leaseTime, lease);
  same('configure: the retry limit changed', after.config.retryLimit, retries);
  same(
    'configure: the options not edited stay',
    { ...after.options, leaseTime: 0, retryLimit: 0, ns: after.namespace, task: after.task },
    { ...before.options, leaseTime: 0, retryLimit: 0, ns: before.namespace, task: before.task },
  );
  same(
    'configure: the form shows the saved value',
    await page.inputValue('#cfg-retryLimit'),
    String(retries),
  );

  const refusal = await call(
    b,
    'POST',
    '/api/v1/configure',
    { queue: Q, options: { retryLimit: -1 } },
    null,
    400,
  );
  await page.fill('#cfg-retryLimit', '-1');
  await page.click('[data-testid=config-save]');
  await page.waitForSelector('[data-testid=config-error]');
  const shown = await page.$eval('[data-testid=config-error]', (e) => e.textContent);
  check(
    "configure: an invalid value shows the broker's error",
    shown.includes(refusal.error),
    shown,
  );
  same('configure: the form keeps what was typed', await page.inputValue('#cfg-retryLimit'), '-1');
  same(
    'configure: the refused value changed nothing',
    (await call(b, 'GET', `/api/v1/status/queues/${Q}?limit=1`)).queue.config.retryLimit,
    retries,
  );

  // Clear: Escape backs out, the confirmation clears.
  const all = await queueAnswer(b, 'limit=1000');
  const messages = all.partitions.reduce((n, p) => n + p.stats.total, 0);
  await page.click('[data-testid=clear]');
  await page.waitForSelector('[data-testid=confirm]');
  await page.keyboard.press('Escape');
  check(
    'clear: Escape closes the confirmation',
    await becomes(page, () => !document.querySelector('[data-testid=confirm]')),
  );
  same(
    'clear: backing out deletes nothing',
    (await queueAnswer(b, 'limit=1000')).partitions.reduce((n, p) => n + p.stats.total, 0),
    messages,
  );
  await page.click('[data-testid=clear]');
  await page.click('[data-testid=confirm-action]');
  await page.waitForSelector('[data-testid=notice]');
  same('clear: the page says how many went', await value(page, 'notice'), messages);
  const cleared = await queueAnswer(b, 'limit=1000');
  same(
    'clear: the API has no message left in the queue',
    cleared.partitions.reduce((n, p) => n + p.stats.total, 0),
    0,
  );
  same('clear: the partitions remain', cleared.partitions.length, all.partitions.length);

  // Delete another queue, after its confirmation.
  await open(page, b, '#/queue?name=qd-doomed');
  await page.click('[data-testid=delete]');
  await page.click('[data-testid=confirm-action]');
  await page.waitForFunction(() => location.hash === '#/queues');
  await call(b, 'GET', '/api/v1/resources/queues/qd-doomed', null, null, 404);
  check('delete: the API no longer has the queue', true);

  // A queue with options away from their defaults: an edit of one keeps every other.
  await configured(page, b);
  // A queue read by more groups than a page: the broker's pages of them.
  await crowded(page, b);

  await call(b, 'GET', '/api/v1/resources/queues/qd-missing', null, null, 404);
  await open(page, b, '#/queue?name=qd-missing');
  check(
    'queue: an unknown queue says "Queue not found"',
    await becomes(page, () => document.querySelector('[data-testid=not-found]')),
  );

  // From the list: the name links to the page, Enter on a row opens it.
  await open(page, b, `#/queues?search=${Q}`);
  await page.waitForSelector(`tr[data-queue="${Q}"] a`);
  await page.click(`tr[data-queue="${Q}"] a`);
  check(
    'queues: a name opens its queue',
    await becomes(page, (h) => location.hash === h, `#/queue?name=${Q}`),
  );
  await page.goBack();
  await page.waitForSelector(`tr[data-queue="${Q}"]`);
  await page.focus(`tr[data-queue="${Q}"]`);
  await page.keyboard.press('Enter');
  check(
    'queues: Enter on a row opens its queue',
    await becomes(page, (h) => location.hash === h, `#/queue?name=${Q}`),
  );
  await page.waitForSelector('[data-testid=queue-total]');

  // Chromium logs the refusals the page asked for: the 400 of the invalid configure and the
  // 404 of the unknown (or just deleted) queue. Anything else is a fault.
  const expected = (e) =>
    (e.text.includes('400') && e.url.endsWith('/api/v1/configure')) ||
    (e.text.includes('404') && /\/qd-(missing|doomed)\b/.test(e.url));
  same(
    'queue: no console errors',
    errors.filter((e) => !expected(e)),
    [],
  );
  await context.close();
}

export async function authenticated({ browser, b, tokens }) {
  const name = 'qd-auth';
  await call(b, 'POST', '/api/v1/push', { items: [{ queue: name, payload: 1 }] }, tokens.admin);
  await call(b, 'POST', '/api/v1/stats/refresh', {}, tokens.admin);
  const api = await call(
    b,
    'GET',
    `/api/v1/resources/queues/${name}?limit=1`,
    null,
    tokens['read-only'],
  );
  for (const [role, save, admin] of [
    ['read-only', false, false],
    ['read-write', true, false],
    ['admin', true, true],
  ]) {
    const { context, page, errors } = await watched(browser);
    await context.addInitScript((t) => sessionStorage.setItem('regent.token', t), tokens[role]);
    await open(page, b, `#/queue?name=${name}`);
    await page.waitForSelector(`[data-testid=session][data-role="${role}"]`);
    await page.waitForSelector('[data-testid=config] input');
    same(
      `queue (${role}): the totals are the API's`,
      await value(page, 'queue-total'),
      api.totals.total,
    );
    same(
      `queue (${role}): save offered`,
      (await page.$$('[data-testid=config-save]')).length > 0,
      save,
    );
    same(
      `queue (${role}): the form is editable`,
      await page.$eval('[data-testid=config] fieldset', (f) => !f.disabled),
      save,
    );
    same(
      `queue (${role}): clear offered`,
      (await page.$$('[data-testid=clear]')).length > 0,
      admin,
    );
    same(
      `queue (${role}): delete offered`,
      (await page.$$('[data-testid=delete]')).length > 0,
      admin,
    );
    same(`queue (${role}): no console errors`, errors, []);
    await context.close();
  }
}
