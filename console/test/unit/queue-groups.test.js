import { describe, expect, it } from 'vitest';
import { GROUP_PAGE, GROUP_PAGES, queueGroups } from '../../src/queue/groups.js';

describe("a queue's consumer groups", () => {
  it('reads pages until a short one and keeps the queue’s elements', async () => {
    const asked = [];
    const all = Array.from({ length: GROUP_PAGE + 3 }, (_, i) => ({
      name: `g${i}`,
      queueName: i % 2 ? 'orders' : 'other',
    }));
    const call = async (path) => {
      asked.push(path);
      const offset = Number(new URL(path, 'http://x').searchParams.get('offset'));
      return all.slice(offset, offset + GROUP_PAGE);
    };
    const { groups, capped } = await queueGroups('orders', call);
    expect(asked.length).toBe(2);
    expect(capped).toBe(false);
    expect(groups.length).toBe(all.filter((g) => g.queueName === 'orders').length);
  });

  it('stops at its bound and says so', async () => {
    let calls = 0;
    const call = async () => {
      calls++;
      return Array.from({ length: GROUP_PAGE }, () => ({ name: 'g', queueName: 'x' }));
    };
    const { capped } = await queueGroups('orders', call);
    expect(calls).toBe(GROUP_PAGES);
    expect(capped).toBe(true);
  });
});
