// The key/value page: a namespace browsed by key prefix as `POST /api/v1/kv`'s getPrefix
// pages it (keys in order, 100 a page, the next one after `nextAfter`), each row's value,
// version, expiry and write time as the API answers them, and a row deleted from the page,
// fenced by the version shown: a row written meanwhile is not deleted. With authentication:
// a read-only token is offered no tab and told why (the broker refuses it the route, reads
// included), a read-write token browses, and another tenant sees none of acme's rows. Rows
// are written through the API, in namespace `console-kv`.
import {
  askFrom,
  backedOut,
  becomes,
  call,
  check,
  confirmed,
  currentTab,
  keyRow,
  keysetPages,
  open,
  same,
  shoot,
  showsKeys,
  status,
  watched,
  watchedAs,
} from './harness.js';

const NS = 'console-kv';
const USERS = 103;

function user(i) {
  return `user:${String(i).padStart(3, '0')}`;
}

function kv(b, operations, token) {
  return call(b, 'POST', '/api/v1/kv', { operations }, token);
}

/** The API's page of `prefix` in the namespace, as the page asks for it. */
async function pageOf(b, prefix, after, token, ns = NS) {
  const op = { op: 'getPrefix', ns, prefix, limit: 100 };
  if (after) op.after = after;
  return (await kv(b, [op], token)).results[0];
}

async function getRow(b, key, token) {
  return (await kv(b, [{ op: 'get', ns: NS, key }], token)).results[0];
}

/**
 * Values' keys are written in order: the broker answers an object's keys sorted.
 * 103 users (one more than a page, kept forever, `user:001` written twice), two sessions
 * (one with a time to live), an order, and a user in another namespace that must not show.
 */
async function make(b, token) {
  const ops = [];
  for (let i = 0; i < USERS; i++)
    ops.push({ op: 'put', ns: NS, key: user(i), value: { n: i, tags: ['a', i] }, forever: true });
  ops.push({ op: 'put', ns: NS, key: user(1), value: { again: true, n: 1 }, forever: true });
  ops.push({ op: 'put', ns: NS, key: 'session:a', value: { sub: 'ada' }, ttlSeconds: 3600 });
  ops.push({ op: 'put', ns: NS, key: 'session:b', value: 'a string', forever: true });
  ops.push({ op: 'put', ns: NS, key: 'order:1', value: 42, forever: true });
  ops.push({ op: 'put', ns: 'console-kv-other', key: user(0), value: 'other', forever: true });
  const done = await kv(b, ops, token);
  if (!done.results.every((r) => r.applied))
    throw new Error(`a put did not apply: ${JSON.stringify(done)}`);
}

/** A time as the page shows it (UTC, to the millisecond), or "never". */
function shown(iso) {
  return iso ? iso.replace('T', ' ').slice(0, 23) : 'never';
}

function expected(rows) {
  return rows.map((r) => [r.key, r.value, r.version, shown(r.expiresAt), shown(r.updatedAt)]);
}

const shownRows = (page) =>
  page.$$eval('[data-testid=kv-table] tbody tr[data-key]', (rows) =>
    rows.map((r) => {
      const col = (c) => r.querySelector(`[data-col=${c}]`);
      return [
        r.dataset.key,
        JSON.parse(col('value').textContent),
        Number(col('version').dataset.value),
        col('expires').textContent,
        col('updated').textContent,
      ];
    }),
  );

/** Whether the table comes to show exactly `keys`, in that order. */
const shows = (page, keys) => showsKeys(page, 'kv-table', keys);

export async function anonymous({ browser, b }) {
  await make(b);
  const { context, page, errors } = await watched(browser);

  // No namespace yet: the page asks for one and reads nothing.
  await open(page, b, '#/kv');
  await page.waitForSelector('[data-testid=empty]');
  same(
    'kv: without a namespace the page asks for one',
    await page.$eval('[data-testid=empty] h2', (e) => e.textContent),
    'Which namespace?',
  );
  same('kv: the tab is shown and current', await currentTab(page), 'Key/value');

  // Typed: the namespace, then (the field kept while the page changes under it) the prefix.
  await page.keyboard.press('/');
  await page.keyboard.type(NS);
  await page.waitForFunction(() => location.hash === '#/kv?ns=console-kv');
  await page.waitForSelector('[data-testid=empty] h2:text("Which keys?")');
  check('kv: without a prefix the page asks for one', true);
  await page.keyboard.press('Tab');
  await page.keyboard.type('user:');
  await page.waitForFunction(() => location.hash === '#/kv?ns=console-kv&prefix=user%3A');
  await page.waitForSelector('[data-testid=kv-table] tbody tr');

  const first = await pageOf(b, 'user:');
  same('kv: the API cuts the users at 100', [first.rows.length, first.truncated], [100, true]);
  same("kv: the first page is the API's", await shownRows(page), expected(first.rows));
  same(
    'kv: the rows are the users in key order, values as written',
    first.rows.slice(0, 3).map((r) => [r.key, r.value, r.version]),
    [
      [user(0), { n: 0, tags: ['a', 0] }, 1],
      [user(1), { again: true, n: 1 }, 2],
      [user(2), { n: 2, tags: ['a', 2] }, 1],
    ],
  );
  same(
    'kv: the count is the rows shown',
    await page.$eval('[data-testid=kv-count]', (e) => Number(e.dataset.value)),
    100,
  );
  same(
    'kv: a value is pretty-printed',
    await page.$eval(`tr[data-key="${user(1)}"] [data-col=value]`, (e) => e.textContent),
    JSON.stringify(first.rows[1].value, null, 2),
  );
  await shoot(page, 'kv.png');

  // The next page starts after the API's nextAfter; the first again, and by the keys.
  const second = await pageOf(b, 'user:', first.nextAfter);
  same('kv: the API has the last 3 users after', second.rows.length, USERS - 100);
  await keysetPages(page, {
    name: 'kv',
    id: 'kv',
    table: 'kv-table',
    nextAfter: first.nextAfter,
    first: first.rows.map((r) => r.key),
    second: second.rows.map((r) => r.key),
    onSecond: async () =>
      same("kv: its rows are the API's", await shownRows(page), expected(second.rows)),
  });

  // Another prefix: an expiry, and a value that is a string.
  await page.fill('[data-testid=kv-prefix]', 'session:');
  await page.press('[data-testid=kv-prefix]', 'Enter');
  check('kv: a prefix narrows the rows', await shows(page, ['session:a', 'session:b']));
  const sessions = await pageOf(b, 'session:');
  same("kv: the sessions are the API's", await shownRows(page), expected(sessions.rows));
  check(
    'kv: a row with a time to live shows when it expires, one kept forever says never',
    sessions.rows[0].expiresAt !== null &&
      (await page.$eval('tr[data-key="session:a"] [data-col=expires]', (e) => e.textContent)) !==
        'never' &&
      (await page.$eval('tr[data-key="session:b"] [data-col=expires]', (e) => e.textContent)) ===
        'never',
  );
  same(
    'kv: the sessions are the only rows, no page after',
    await page.$('[data-testid=kv-pager]'),
    null,
  );

  // A delete, asked and confirmed: the row is gone from the broker and the page.
  await askFrom(page, `${keyRow('session:b')} [data-testid=kv-delete]`);
  same(
    'kv: the question names the version the delete is fenced by',
    await page.textContent('[data-testid=confirm-version]'),
    '1',
  );
  await confirmed(page, 'kv', 'deleted');
  same('kv: the deleted row is gone from the broker', (await getRow(b, 'session:b')).found, false);
  check('kv: and from the page', await shows(page, ['session:a']));

  // Cancelled (the Delete key, then Escape): nothing is deleted.
  await backedOut(page, keyRow('session:a'));
  same('kv: a cancelled delete deletes nothing', (await getRow(b, 'session:a')).found, true);

  // Written while the question is open: the fenced delete leaves the new version.
  await page.fill('[data-testid=kv-prefix]', 'user:00');
  await page.press('[data-testid=kv-prefix]', 'Enter');
  await page.waitForSelector(`tr[data-key="${user(1)}"]`);
  check(
    'kv: no result of the last delete on other rows',
    (await page.$('[data-testid=kv-result]')) === null,
  );
  await askFrom(page, `${keyRow(user(1))} [data-testid=kv-delete]`);
  await kv(b, [{ op: 'put', ns: NS, key: user(1), value: { n: 1, third: true }, forever: true }]);
  await confirmed(page, 'kv', 'changed');
  const kept = await getRow(b, user(1));
  same(
    'kv: a row written since it was shown is not deleted',
    [kept.found, kept.version, kept.value],
    [true, 3, { n: 1, third: true }],
  );
  check(
    'kv: the page says it changed, and shows the new version',
    (await page.textContent('[data-testid=kv-result]')).includes('version 3 now') &&
      (await becomes(
        page,
        (key) =>
          document.querySelector(`tr[data-key="${key}"] [data-col=version]`)?.dataset.value === '3',
        user(1),
      )),
  );

  // A prefix no key has, and a namespace's rows kept to it.
  await page.fill('[data-testid=kv-prefix]', 'nothing:');
  await page.press('[data-testid=kv-prefix]', 'Enter');
  await page.waitForSelector('[data-testid=empty]');
  same('kv: a prefix no key has is empty, as in the API', (await pageOf(b, 'nothing:')).rows, []);
  await open(page, b, '#/kv?ns=console-kv-other&prefix=user:');
  check('kv: another namespace shows its own rows', await shows(page, [user(0)]));
  same('kv: no console errors', errors, []);
  await context.close();
}

export async function authenticated({ browser, b, tokens }) {
  await make(b, tokens.admin);
  const body = { operations: [{ op: 'getPrefix', ns: NS, prefix: 'user:' }] };
  const hash = '#/kv?ns=console-kv&prefix=user:';

  // Read-only: no tab, and the page says why without asking the broker, which refuses.
  const ro = await watchedAs(browser, tokens['read-only']);
  await open(ro.page, b, '');
  await ro.page.waitForSelector('[data-testid=session][data-role=read-only]');
  same(
    'kv (read-only): no Key/value tab',
    await ro.page.$$eval('.tabs a', (l) => l.some((a) => a.textContent === 'Key/value')),
    false,
  );
  await open(ro.page, b, hash);
  await ro.page.waitForSelector('[data-testid=error]');
  same(
    'kv (read-only): the page says 403, and that the route needs read-write',
    await ro.page.$eval('[data-testid=error]', (e) => [
      e.dataset.status,
      e.textContent.includes('needs a read-write or admin token, not read-only'),
    ]),
    ['403', true],
  );
  same(
    'kv (read-only): the broker refuses the read to that token',
    await status(b, 'POST', '/api/v1/kv', body, tokens['read-only']),
    403,
  );
  same('kv (read-only): no console errors', ro.errors, []);
  await ro.context.close();

  // Read-write: the tab, and the rows.
  const rw = await watchedAs(browser, tokens['read-write']);
  await open(rw.page, b, '');
  await rw.page.waitForSelector('[data-testid=session][data-role=read-write]');
  await rw.page.click('.tabs a:text("Key/value")');
  await rw.page.waitForFunction(() => location.hash === '#/kv');
  await open(rw.page, b, hash);
  await rw.page.waitForSelector('[data-testid=kv-table] tbody tr');
  const first = await pageOf(b, 'user:', '', tokens['read-write']);
  same("kv (read-write): the rows are the API's", await shownRows(rw.page), expected(first.rows));
  same('kv (read-write): no console errors', rw.errors, []);
  await rw.context.close();

  // A read-only token the console could not ask about (whoami failed): the tab is shown, and
  // the broker's 403 is said as the page says it.
  const blind = await watchedAs(browser, tokens['read-only']);
  await blind.context.route('**/api/v1/whoami', (route) => route.abort());
  await open(blind.page, b, hash);
  await blind.page.waitForSelector('[data-testid=error][data-status="403"]');
  check(
    'kv (read-only, role unknown): the refusal says the route needs read-write',
    await blind.page.$eval('[data-testid=error]', (e) =>
      e.textContent.includes('needs a read-write or admin token'),
    ),
  );
  same(
    'kv (read-only, role unknown): the only console errors are the refused calls',
    blind.errors.filter((e) => !/403|ERR_FAILED/.test(e.text)),
    [],
  );
  await blind.context.close();

  // Another tenant: none of acme's rows.
  const other = await watchedAs(browser, tokens.other);
  await open(other.page, b, hash);
  await other.page.waitForSelector('[data-testid=empty]');
  same(
    "kv (second tenant): none of acme's rows",
    await other.page.$$eval('[data-testid=kv-table] tbody tr', (r) => r.length),
    0,
  );
  same('kv (second tenant): the API agrees', (await pageOf(b, 'user:', '', tokens.other)).rows, []);
  same('kv (second tenant): no console errors', other.errors, []);
  await other.context.close();
}
