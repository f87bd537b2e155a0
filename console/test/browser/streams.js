// The Streams pages: the queries listed as the API lists them, a query's partitions with
// their counters, and a partition's state by key, narrowed by a prefix. The data is made
// through the API as the streams SDK makes it: register a query, push to its source, pop
// with the query's consumer group, commit a cycle with state operations and the ack.
// Queues `stream-*`, queries `stream-*`.
import {
  becomes,
  call,
  check,
  currentTab,
  open,
  same,
  shoot,
  watched,
  watchedAs,
} from './harness.js';

const SEP = '\u001f';
const W1 = '2026-01-01T00:00:00.000Z';
const W2 = '2026-01-01T00:01:00.000Z';
const GROUP = 'streams.stream-per-minute';

function window(acc, start) {
  const s = Date.parse(start);
  return { acc, windowStart: s, windowEnd: s + 60000 };
}

/** Pushes to a partition of the source, pops it for the query's group, commits a cycle. */
async function cycle(b, token, query, partition, stateOps) {
  const items = [1, 2, 3].map((i) => ({ queue: 'stream-src', partition, payload: { i } }));
  await call(b, 'POST', '/api/v1/push', { items }, token);
  const popped = await call(
    b,
    'GET',
    `/api/v1/pop/queue/stream-src/partition/${partition}?batch=10&wait=false&consumerGroup=${GROUP}`,
    null,
    token,
  );
  const last = popped.messages.at(-1);
  const done = await call(
    b,
    'POST',
    '/streams/v1/cycle',
    {
      query_id: query.query_id,
      partition_id: last.partitionId,
      consumer_group: GROUP,
      state_ops: stateOps,
      push_items: [],
      ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed' },
      release_lease: true,
    },
    token,
  );
  if (!done.success) throw new Error(`the cycle was refused: ${JSON.stringify(done)}`);
  return { partitionId: last.partitionId, popped: popped.messages.length };
}

/** Two queries, one with two cycled partitions; answers the one with state. */
async function make(b, token) {
  const query = await call(
    b,
    'POST',
    '/streams/v1/queries',
    {
      name: 'stream-per-minute',
      source_queue: 'stream-src',
      sink_queue: 'stream-totals',
      config_hash: 'h1',
    },
    token,
  );
  await call(
    b,
    'POST',
    '/streams/v1/queries',
    { name: 'stream-idle', source_queue: 'stream-other', config_hash: 'h2' },
    token,
  );
  const upsert = (key, value) => ({ type: 'upsert', key, value });
  const a = await cycle(b, token, query, 'stream-a', [
    upsert(`agg${SEP}user-1${SEP}${W1}`, window(3, W1)),
    upsert(`agg${SEP}user-1${SEP}${W2}`, window(5, W2)),
    upsert(`agg${SEP}user-2${SEP}${W1}`, window(7, W1)),
    upsert(`seen${SEP}tx-1`, true),
    upsert('plain', { note: 'a key without parts' }),
  ]);
  const z = await cycle(b, token, query, 'stream-z', [
    upsert(`agg${SEP}user-9${SEP}${W1}`, window(1, W1)),
  ]);
  return { query, a, z };
}

const shownRows = (page) =>
  page.$$eval('[data-testid=state-table] tbody tr[data-key]', (rows) =>
    rows.map((r) => [r.dataset.key, JSON.parse(r.querySelector('[data-col=value]').textContent)]),
  );

async function stateOf(b, query, partitionId, prefix) {
  const body = { query_id: query.query_id, partition_id: partitionId, keys: [], limit: 1000 };
  if (prefix) body.key_prefix = prefix;
  return (await call(b, 'POST', '/streams/v1/state/get', body)).rows;
}

export async function anonymous({ browser, b }) {
  const { query, a, z } = await make(b);
  same('streams: a cycle acks what the pop gave', [a.popped, z.popped], [3, 3]);
  const listed = (await call(b, 'GET', '/streams/v1/queries')).queries;
  const { context, page, errors } = await watched(browser);

  // The list.
  await open(page, b, '#/streams');
  await page.waitForSelector('[data-testid=streams-table] tbody tr');
  same(
    "streams: the list is the API's queries, by name",
    await page.$$eval('tbody tr[data-query-id]', (rows) => rows.map((r) => r.dataset.name)),
    listed.map((q) => q.name),
  );
  same(
    'streams: a row shows source → sink and the config hash',
    await page.$eval(`tr[data-query-id="${query.query_id}"]`, (r) => [
      r.querySelector('[data-col=queues]').textContent,
      r.querySelector('[data-col=hash]').textContent,
    ]),
    ['stream-src → stream-totals', 'h1'],
  );
  same(
    'streams: a query without a sink says so',
    await page.$eval('tr[data-name="stream-idle"] [data-col=queues]', (e) => e.textContent),
    'stream-other → no sink',
  );
  same('streams: the tab is current', await currentTab(page), 'Streams');
  await shoot(page, 'streams.png');
  await page.keyboard.press('/');
  await page.keyboard.type('idle');
  await page.waitForFunction(() => location.hash.includes('search=idle'));
  check(
    'streams: the filter narrows the list',
    await becomes(page, () => {
      const rows = [...document.querySelectorAll('tbody tr[data-query-id]')];
      return rows.length === 1 && rows[0].dataset.name === 'stream-idle';
    }),
  );

  // A query's partitions, opened from the keyboard.
  await open(page, b, '#/streams');
  await page.waitForSelector(`tr[data-query-id="${query.query_id}"]`);
  await page.focus(`tr[data-query-id="${query.query_id}"]`);
  await page.keyboard.press('Enter');
  await page.waitForFunction((id) => location.hash === `#/stream?id=${id}`, query.query_id);
  await page.waitForSelector('[data-testid=stream-partitions] tbody tr');
  const parts = await call(b, 'GET', `/streams/v1/queries/${query.query_id}/partitions`);
  same(
    "stream: the partitions are the API's, most recently cycled first",
    await page.$$eval('tbody tr[data-partition-id]', (rows) =>
      rows.map((r) => [
        r.dataset.partition,
        ...['state-rows', 'cycles', 'state-ops'].map((c) =>
          Number(r.querySelector(`[data-col=${c}]`).dataset.value),
        ),
      ]),
    ),
    parts.partitions.map((p) => [p.partition, p.state_rows, p.cycles, p.state_ops]),
  );
  same(
    'stream: stream-z cycled last; stream-a holds its 5 rows from 1 cycle of 5 operations',
    parts.partitions.map((p) => [p.partition, p.state_rows, p.cycles, p.state_ops]),
    [
      ['stream-z', 1, 1, 1],
      ['stream-a', 5, 1, 5],
    ],
  );
  same(
    "stream: the total is the API's",
    [await page.$eval('[data-testid=partitions-total]', (e) => Number(e.dataset.value))],
    [parts.total],
  );
  same(
    'stream: the registration is shown',
    await page.$eval('[data-testid=query-meta]', (e) => [
      e.querySelector('[data-testid=meta-id]').textContent,
      e.querySelector('[data-testid=meta-hash]').textContent,
    ]),
    [query.query_id, 'h1'],
  );
  check(
    'stream: the last cycle has a time',
    await page.$eval(`tr[data-partition-id="${a.partitionId}"] [data-col=last-cycle]`, (e) =>
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/.test(e.textContent),
    ),
  );
  await shoot(page, 'stream.png');

  // A partition's state.
  await page.click(`tr[data-partition-id="${a.partitionId}"] a`);
  await page.waitForFunction(() => location.hash.startsWith('#/stream-state?'));
  await page.waitForSelector('[data-testid=state-table] tbody tr');
  const all = await stateOf(b, query, a.partitionId);
  same(
    "state: the rows are the API's, by key, values as written",
    await shownRows(page),
    all.map((r) => [r.key, r.value]),
  );
  same('state: all five keys', all.length, 5);
  same(
    'state: a key shows its separators as ` · `',
    await page.$eval(`tr[data-key="agg${SEP}user-1${SEP}${W1}"] .state-key`, (e) => e.textContent),
    `agg · user-1 · ${W1}`,
  );
  same(
    'state: the heading names the query and the partition',
    [
      await page.textContent('[data-testid=query-name]'),
      await page.textContent('[data-testid=partition-name]'),
    ],
    ['stream-per-minute', 'stream-a'],
  );
  same(
    'state: the operator tags seen are offered',
    await page.$$eval('[data-testid=state-tags] a[data-prefix]', (l) =>
      l.map((e) => e.textContent),
    ),
    ['agg · ', 'seen · '],
  );
  same(
    'state: the values are pretty-printed',
    await page.$eval(`tr[data-key="seen${SEP}tx-1"] [data-col=value]`, (e) => e.textContent),
    'true',
  );
  await shoot(page, 'stream-state.png');

  // The prefix, typed: ` · ` is the separator.
  const agg = await stateOf(b, query, a.partitionId, `agg${SEP}`);
  await page.keyboard.press('/');
  check(
    'state: `/` focuses the prefix',
    await page.$eval('[data-testid=state-prefix]', (e) => e === document.activeElement),
  );
  await page.keyboard.type('agg · ');
  await page.waitForFunction(() => location.hash.includes('prefix=agg%1F'));
  check(
    'state: the prefix narrows the rows to the API’s',
    await becomes(
      page,
      (n) => document.querySelectorAll('[data-testid=state-table] tbody tr').length === n,
      agg.length,
    ),
  );
  same(
    "state: the narrowed rows are the API's",
    await shownRows(page),
    agg.map((r) => [r.key, r.value]),
  );
  same('state: three agg keys', agg.length, 3);

  // A key's part narrows further: the windows of user-1.
  await page.click(`tr[data-key="agg${SEP}user-1${SEP}${W2}"] a.part-1`);
  check(
    "state: a key's part narrows to the keys that share it",
    await becomes(page, () => {
      const keys = [...document.querySelectorAll('[data-testid=state-table] tbody tr')].map(
        (r) => r.dataset.key,
      );
      return keys.length === 2 && keys.every((k) => k.startsWith('agg\u001fuser-1\u001f'));
    }),
  );
  same(
    'state: the input shows the prefix with its separators',
    await page.inputValue('[data-testid=state-prefix]'),
    'agg · user-1 · ',
  );
  // A tag seen before still offered: the other operator's rows.
  await page.click('[data-testid=state-tags] a[data-prefix="seen\u001f"]');
  check(
    "state: a tag selects its operator's rows",
    await becomes(page, () => {
      const keys = [...document.querySelectorAll('[data-testid=state-table] tbody tr')].map(
        (r) => r.dataset.key,
      );
      return keys.length === 1 && keys[0] === 'seen\u001ftx-1';
    }),
  );
  await page.fill('[data-testid=state-prefix]', 'nothing');
  await page.press('[data-testid=state-prefix]', 'Enter');
  await page.waitForSelector('[data-testid=empty]');
  same(
    'state: a prefix no key has is empty, as in the API',
    (await stateOf(b, query, a.partitionId, 'nothing')).length,
    0,
  );

  // Fewer rows than match: the page says so and offers more.
  await open(page, b, `#/stream-state?id=${query.query_id}&partition=${a.partitionId}&limit=2`);
  await page.waitForSelector('[data-testid=state-more]');
  same(
    'state: a limit shows the first rows by key',
    (await shownRows(page)).map(([k]) => k),
    all.slice(0, 2).map((r) => r.key),
  );
  same(
    'state: and counts them as more',
    await page.textContent('[data-testid=state-count]'),
    '2+ rows',
  );

  same('streams: no console errors', errors, []);
  await open(page, b, '#/stream?id=00000000-0000-0000-0000-000000000000');
  await page.waitForSelector('[data-testid=not-found]');
  check('stream: an unknown query is not found', true);
  same(
    'stream: its 404 is the only console error',
    errors.filter((e) => !e.text.includes('404')),
    [],
  );
  await context.close();
}

/** A read-only token reads the tenant's queries and state; another tenant sees none. */
export async function authenticated({ browser, b, tokens }) {
  const { query, a } = await make(b, tokens.admin);
  const ro = await watchedAs(browser, tokens['read-only']);
  await open(ro.page, b, `#/stream-state?id=${query.query_id}&partition=${a.partitionId}`);
  await ro.page.waitForSelector('[data-testid=state-table] tbody tr');
  same(
    'streams (read-only): the state is shown',
    await ro.page.$$eval('tbody tr[data-key]', (r) => r.length),
    5,
  );
  same('streams (read-only): no console errors', ro.errors, []);
  await ro.context.close();

  const other = await watchedAs(browser, tokens.other);
  await open(other.page, b, '#/streams');
  await other.page.waitForSelector('[data-testid=empty]');
  same(
    "streams (second tenant): none of acme's queries",
    await other.page.$$eval('tbody tr[data-query-id]', (r) => r.length),
    0,
  );
  same('streams (second tenant): no console errors', other.errors, []);
  await open(other.page, b, `#/stream?id=${query.query_id}`);
  await other.page.waitForSelector('[data-testid=not-found]');
  check("streams (second tenant): acme's query is not found", true);
  same(
    'streams (second tenant): its 404 is the only console error',
    other.errors.filter((e) => !e.text.includes('404')),
    [],
  );
  await other.context.close();
}
