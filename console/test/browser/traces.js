// The traces page: it lists the API's trace names, a name's events with the messages they
// were recorded on, and opens those messages. Queue `msg-traced`, trace names `msg-flow-*`.
import { becomes, call, check, currentTab, open, same, shoot, watched } from './harness.js';

async function cells(page, selector, key) {
  return page.$$eval(selector, (rows, k) => rows.map((r) => r.dataset[k]), key);
}

export async function anonymous({ browser, b }) {
  const items = [0, 1, 2, 3].map((i) => ({
    queue: 'msg-traced',
    partition: `p${i % 2}`,
    payload: { order: i },
  }));
  const pushed = await call(b, 'POST', '/api/v1/push', { items });
  const record = (m, traceNames, eventType, data) =>
    call(b, 'POST', '/api/v1/traces', {
      partitionId: m.partition_id,
      transactionId: m.transaction_id,
      traceNames,
      eventType,
      data,
    });
  for (const [i, m] of pushed.slice(0, 3).entries()) {
    await record(m, ['msg-flow-a'], 'received', { i });
    await record(m, ['msg-flow-a', 'msg-flow-c'], 'handled', { i, ok: true });
  }
  await record(pushed[3], 'msg-flow-b', 'received', { i: 3 });

  const names = await call(b, 'GET', '/api/v1/traces/names?limit=50&offset=0');
  const { context, page, errors } = await watched(browser);
  await open(page, b, '#/traces');
  await page.waitForSelector('[data-testid=trace-names] tbody tr, [data-testid=empty]');
  same(
    "traces: the names are the API's, most recent first",
    await cells(page, 'tbody tr[data-name]', 'name'),
    names.trace_names.map((n) => n.trace_name),
  );
  same(
    "traces: the total is the API's",
    await page.$eval('[data-testid=names-total]', (e) => Number(e.dataset.value)),
    names.total,
  );
  check(
    'traces: the names recorded here are listed',
    ['msg-flow-a', 'msg-flow-b', 'msg-flow-c'].every((n) =>
      names.trace_names.some((x) => x.trace_name === n),
    ),
  );
  const a = names.trace_names.find((n) => n.trace_name === 'msg-flow-a');
  same(
    "traces: a name's counts are the API's",
    await page.$eval('tbody tr[data-name="msg-flow-a"]', (r) =>
      [...r.querySelectorAll('td.num')].map((td) => Number(td.textContent.replace(/,/g, ''))),
    ),
    [a.trace_count, a.message_count],
  );
  same(
    'traces: msg-flow-a counts 6 events on 3 messages',
    [a.trace_count, a.message_count],
    [6, 3],
  );

  // The keyboard: focus the row of a name, Enter opens it.
  await page.focus('tbody tr[data-name="msg-flow-a"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash.includes('name=msg-flow-a'));
  const events = await call(b, 'GET', '/api/v1/traces/by-name/msg-flow-a?limit=50&offset=0');
  await page.waitForSelector('[data-testid=trace-events] tbody tr');
  same(
    "traces: a name lists the API's events",
    await cells(page, 'tbody tr[data-event-id]', 'eventId'),
    events.traces.map((t) => t.id),
  );
  same(
    'traces: with the messages they touched',
    await cells(page, 'tbody tr[data-event-id]', 'tx'),
    events.traces.map((t) => t.transaction_id),
  );
  same(
    'traces: every message of the flow is there',
    [...new Set(events.traces.map((t) => t.transaction_id))].sort(),
    pushed
      .slice(0, 3)
      .map((m) => m.transaction_id)
      .sort(),
  );
  same(
    "traces: the total is the API's",
    await page.$eval('[data-testid=events-total]', (e) => Number(e.dataset.value)),
    events.total,
  );
  await shoot(page, 'traces.png');

  const target = events.traces[0];
  await page.click(`tbody tr[data-event-id="${target.id}"] a`);
  await page.waitForFunction(
    (t) =>
      location.hash.startsWith('#/message?') &&
      location.hash.includes(`tx=${encodeURIComponent(t)}`),
    target.transaction_id,
  );
  await page.waitForSelector('[data-testid=payload]');
  same(
    'traces: a click opens that message',
    [
      await page.textContent('[data-testid=meta-tx]'),
      JSON.parse(await page.textContent('[data-testid=payload]')),
    ],
    [target.transaction_id, target.message_payload],
  );
  check(
    "traces: its timeline holds the flow's events",
    await becomes(
      page,
      (n) => document.querySelectorAll('[data-testid=timeline] li[data-event-id]').length === n,
      events.traces.filter((t) => t.transaction_id === target.transaction_id).length,
    ),
  );
  same('traces: the message page sits under the Messages tab', await currentTab(page), 'Messages');

  await open(page, b, '#/traces?name=msg-flow-none');
  await page.waitForSelector('[data-testid=empty]');
  same(
    'traces: an unknown name is empty, as in the API',
    (await call(b, 'GET', '/api/v1/traces/by-name/msg-flow-none')).total,
    0,
  );
  same('traces: no console errors', errors, []);
  await context.close();
}
