"""Queen's ephemeral queues (spec §18.3) through the official Python client's
`client.ephemeral` (queen-mq 1.3.0) against a live broker.

Usage: ephemeral_flow.py <broker-url>

Every verb: configure (both spellings of an option), push (one message, many, a partition, the
buffered producer), pop (queue mode, competing and fan-out groups, auto-ack, a long poll woken
by a push), ack (acked, redelivered with attempts + 1, unknown, the retry limit), the bounds
(`reject` raising the client's 429 error, `dropOldest`), queues, depth (and
`EphemeralQueueNotFoundError` for a queue that is not there), reset and delete. Exit status 0
only if every check passed.
"""

import asyncio
import os
import sys
import traceback
import uuid

from queen import EPHEMERAL_QUEUE_NOT_FOUND, Queen
from queen.errors import EphemeralError, EphemeralQueueNotFoundError

RUN = uuid.uuid4().hex[:10]
TOKEN = os.environ.get("QUEEN_TOKEN") or None


def name(role: str) -> str:
    return f"pye-{RUN}-{role}"


def step(msg: str) -> None:
    print(f"[ephemeral_flow] {msg}", flush=True)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def payloads(result) -> list:
    return [m["payload"] for m in result["messages"]]


async def declare_and_inspect(eph) -> None:
    q = name("declared")
    step("configure, queues, depth")
    await eph.configure(q, {"maxLength": 100}, ttl_seconds=60, policy="dropOldest")
    listed = {row["queue"]: row for row in (await eph.queues())["queues"]}
    check(listed[q]["tier"] == "declared", f"declared tier: {listed[q]}")
    check(listed[q]["options"]["maxLength"] == 100, f"maxLength: {listed[q]}")
    check(listed[q]["options"]["ttlSeconds"] == 60, f"ttlSeconds: {listed[q]}")
    check(listed[q]["options"]["policy"] == "dropOldest", f"policy: {listed[q]}")
    depth = await eph.depth(q)
    check(depth["depth"] == 0 and depth["pending"] == 0, f"empty depth: {depth}")
    try:
        await eph.depth(name("never-was"))
        raise AssertionError("depth of an unknown queue did not raise")
    except EphemeralQueueNotFoundError as e:
        check(e.code == EPHEMERAL_QUEUE_NOT_FOUND, f"code: {e.code}")
        check(e.queue == name("never-was"), f"queue: {e.queue}")


async def push_pop_ack(eph) -> None:
    q = name("work")
    step("push, pop in order, ack outcomes")
    r = await eph.push(q, [{"n": 1}, {"n": 2}, {"n": 3}])
    check(r == {"pushed": 3}, f"push answer: {r}")
    await eph.push(q, {"data": {"n": 4}})
    await eph.push(q, [{"n": "p"}], partition="side")
    got = await eph.pop(q, batch=10, group="workers")
    check(payloads(got) == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}, {"n": "p"}], f"pop: {got}")
    check(all(m["attempts"] == 1 for m in got["messages"]), f"attempts: {got}")
    msgs = got["messages"]
    res = await eph.ack(q, msgs[:2], group="workers")
    check([r["outcome"] for r in res["results"]] == ["acked", "acked"], f"ack: {res}")
    res = await eph.ack(q, [{"id": msgs[2]["id"], "status": "retry"}, msgs[3]], group="workers", status=False)
    check([r["outcome"] for r in res["results"]] == ["redelivered", "redelivered"], f"nack: {res}")
    res = await eph.ack(q, msgs[0]["id"], group="workers")
    check(res["results"][0]["outcome"] == "unknown", f"second ack: {res}")
    again = await eph.pop(q, batch=10, group="workers")
    check(payloads(again) == [{"n": 3}, {"n": 4}], f"redelivered: {again}")
    check([m["attempts"] for m in again["messages"]] == [2, 2], f"attempts + 1: {again}")
    await eph.ack(q, again["messages"] + [msgs[4]], group="workers")
    empty = await eph.pop(q, group="workers")
    check(empty == {"queue": q, "messages": []}, f"empty pop: {empty}")


async def groups(eph) -> None:
    q = name("groups")
    step("queue mode, competing consumers, fan-out, auto-ack")
    # A queue keeps a message until every group it knows is past it: subscribers join (pop
    # once) before the messages they must see are pushed.
    for group in ["tail-a", "tail-b", "w", None]:
        check((await eph.pop(q, group=group))["messages"] == [], "a new queue is empty")
    await eph.push(q, [1, 2, 3])
    a = await eph.pop(q, batch=10, group="tail-a", auto_ack=True)
    b = await eph.pop(q, batch=10, group="tail-b", auto_ack=True)
    check(payloads(a) == [1, 2, 3] and payloads(b) == [1, 2, 3], f"fan-out: {a} {b}")
    w1 = await eph.pop(q, batch=2, group="w")
    w2 = await eph.pop(q, batch=2, group="w")
    check(payloads(w1) == [1, 2] and payloads(w2) == [3], f"competing: {w1} {w2}")
    plain = await eph.pop(q, batch=10, auto_ack=True)
    check(payloads(plain) == [1, 2, 3], f"queue mode: {plain}")
    check((await eph.pop(q, auto_ack=True))["messages"] == [], "queue mode drained")


async def long_poll(eph) -> None:
    q = name("inbox")
    step("a waiting pop woken by a push")
    waiting = asyncio.create_task(eph.pop(q, wait=True, timeout=20000, group="g"))
    await asyncio.sleep(0.3)
    await eph.push(q, {"payload": "ping"})
    got = await asyncio.wait_for(waiting, 15)
    check(payloads(got) == ["ping"], f"long poll: {got}")
    timed_out = await eph.pop(q, wait=True, timeout_millis=200, group="g")
    check(timed_out["messages"] == [], f"timed out: {timed_out}")


async def retry_limit(eph) -> None:
    q = name("retry")
    step("retry limit drops the message")
    await eph.configure(q, retry_limit=2)
    await eph.push(q, "job")
    first = await eph.pop(q)
    res = await eph.ack(q, first["messages"], status="failed")
    check(res["results"][0]["outcome"] == "redelivered", f"first nack: {res}")
    second = await eph.pop(q)
    check(second["messages"][0]["attempts"] == 2, f"second: {second}")
    res = await eph.ack(q, second["messages"], status=False)
    check(res["results"][0]["outcome"] == "acked", f"dropped: {res}")
    check((await eph.pop(q))["messages"] == [], "nothing after the limit")
    row = [r for r in (await eph.queues())["queues"] if r["queue"] == q][0]
    check(row["drops"]["retry"] == 1, f"drops: {row}")


async def bounds(eph) -> None:
    step("reject and dropOldest")
    strict = name("strict")
    await eph.configure(strict, max_length=2)
    await eph.push(strict, [1, 2])
    try:
        await eph.push(strict, [3])
        raise AssertionError("a push over maxLength did not raise")
    except EphemeralError as e:
        check(e.status == 429 and e.code == "queue_full", f"refusal: {e.status} {e.code}")
    feed = name("feed")
    await eph.configure(feed, max_length=2, policy="dropOldest")
    await eph.push(feed, [1, 2, 3, 4][:2])
    await eph.push(feed, [3, 4])
    got = await eph.pop(feed, batch=10, auto_ack=True)
    check(payloads(got) == [3, 4], f"dropOldest: {got}")


async def buffered_reset_delete(client, eph) -> None:
    q = name("buffered")
    step("the buffered producer, reset, delete")
    r = await eph.push(q, [{"i": i} for i in range(5)], buffered={"message_count": 5, "time_millis": 50})
    check(r == {"buffered": True, "count": 5}, f"buffered: {r}")
    await eph.flush(q)
    depth = await eph.depth(q)
    check(depth["depth"] == 5, f"after flush: {depth}")
    res = await eph.reset(q)
    check(res == {"queue": q, "dropped": 5}, f"reset: {res}")
    check((await eph.pop(q))["messages"] == [], "empty after reset")
    res = await eph.delete(q)
    check(res == {"queue": q, "deleted": True}, f"delete: {res}")
    res = await eph.delete(q)
    check(res == {"queue": q, "deleted": False}, f"delete again: {res}")
    try:
        await eph.depth(q)
        raise AssertionError("depth of a deleted queue did not raise")
    except EphemeralQueueNotFoundError:
        pass


async def run(url: str) -> None:
    client = Queen(url, timeout_millis=10000, bearer_token=TOKEN)
    eph = client.ephemeral
    try:
        await declare_and_inspect(eph)
        await push_pop_ack(eph)
        await groups(eph)
        await long_poll(eph)
        await retry_limit(eph)
        await bounds(eph)
        await buffered_reset_delete(client, eph)
    finally:
        await asyncio.wait_for(client.close(), 10)


def main() -> int:
    url = sys.argv[1]
    try:
        asyncio.run(asyncio.wait_for(run(url), 100))
    except Exception:
        traceback.print_exc()
        return 1
    step("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
