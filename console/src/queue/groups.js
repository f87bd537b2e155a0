// The consumer groups reading one queue. `GET /api/v1/consumer-groups` has no queue filter:
// it pages every (group, queue) element of the tenant, by group then queue, from the stats
// snapshot. So the page reads it a page at a time and keeps this queue's, up to a bound, so
// a tenant with very many groups costs a bounded number of calls.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';

export const GROUP_PAGE = 1000;
export const GROUP_PAGES = 10;

/** The elements of `queue`, and whether the scan stopped at its bound with more to read. */
export async function queueGroups(queue, call = api) {
  const found = [];
  for (let i = 0; i < GROUP_PAGES; i++) {
    const page = await call(`/api/v1/consumer-groups?limit=${GROUP_PAGE}&offset=${i * GROUP_PAGE}`);
    for (const g of page) if (g.queueName === queue) found.push(g);
    if (page.length < GROUP_PAGE) return { groups: found, capped: false };
  }
  return { groups: found, capped: true };
}

export function useQueueGroups(queue, { epoch, everyMs = 30000 }) {
  const [state, setState] = useState({ data: null, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const load = () =>
      queueGroups(queue).then(
        (data) => live && setState({ data, error: null }),
        (error) => live && setState((s) => ({ data: s.data, error })),
      );
    load();
    const timer = setInterval(() => {
      if (!document.hidden) load();
    }, everyMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [queue, epoch, everyMs, tick]);
  return { ...state, reload: () => setTick((n) => n + 1) };
}
