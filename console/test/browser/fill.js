// The data every scenario starts from: 55 queues (more than one page of 50), messages in
// each on two partitions, some consumed, one dead letter in `orders`. Scenarios that act
// (requeue, seek, configure) push their own queues, so they do not move these numbers.
import { call, ids } from './harness.js';

export async function fill(b, token) {
  await call(
    b,
    'POST',
    '/api/v1/configure',
    { queue: 'orders', namespace: 'shop', task: 'billing' },
    token,
  );
  const items = [];
  for (let q = 0; q < 55; q++) {
    const queue = q === 0 ? 'orders' : `queue-${String(q).padStart(2, '0')}`;
    for (let i = 0; i <= q % 4; i++)
      items.push({ queue, partition: `p${i % 2}`, payload: { q, i } });
  }
  await call(b, 'POST', '/api/v1/push', { items }, token);
  // `orders` holds one message: it is dead-lettered (a `dlq` ack ends the lease, so it is
  // the only ack of its pop).
  const popped = await call(b, 'GET', '/api/v1/pop/queue/orders?batch=1&wait=false', null, token);
  const acked = await call(
    b,
    'POST',
    '/api/v1/ack',
    { ...ids(popped.messages[0]), status: 'dlq', error: 'browser test' },
    token,
  );
  if (!acked[0]?.dlq) throw new Error(`the dead letter was not filed: ${JSON.stringify(acked)}`);
  await call(b, 'POST', '/api/v1/stats/refresh', {}, token);
  // The series is flushed every 5 s: wait for it, so the charts have the pushes to draw.
  for (let i = 0; i < 40; i++) {
    const st = await call(b, 'GET', '/api/v1/status', null, token);
    if (st.throughput.some((p) => p.processed > 0)) return;
    await new Promise((ok) => setTimeout(ok, 250));
  }
  throw new Error('the series never showed the pushes');
}
