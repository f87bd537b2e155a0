"""Queen's timers (spec §18.2) through the official Python client (queen-mq 1.3.0):
`client.timers.schedule/reschedule/peek/list/list_all/cancel` and the fluent
`client.timer(queue).key(..).payload(..).after_ms(..).schedule()` against a live broker, the
delivered messages consumed with the client's own pop and ack.

Usage: timers_flow.py <broker-url>. Exit status 0 only if every check passed.
"""

import asyncio
import os
import sys
import time
import traceback
import uuid
from datetime import timedelta

from queen import Queen
from queen.errors import TimerError

RUN = uuid.uuid4().hex[:10]
TOTAL_TIMEOUT_S = 90.0


def step(msg: str) -> None:
    print(f"[timers_flow] {msg}", flush=True)


async def consume(client: Queen, queue: str, want: int, within_s: float = 15.0) -> list:
    """Pops and acks `queue` until `want` messages came (a queue the first timer creates
    answers nothing until it exists)."""
    got = []
    deadline = time.monotonic() + within_s
    while len(got) < want:
        assert time.monotonic() < deadline, f"{len(got)} of {want} delivered from {queue}"
        msgs = await client.queue(queue).batch(100).wait(True).timeout_millis(1000).pop()
        if msgs:
            await client.ack(msgs, True)
            got.extend(msgs)
        else:
            await asyncio.sleep(0.05)
    return got


async def run(url: str) -> None:
    client = Queen(url, timeout_millis=10000, bearer_token=os.environ.get("QUEEN_TOKEN") or None)
    q = f"pyt-{RUN}-reminders"
    try:
        step("schedule, peek, the promised ids delivered")
        r = await client.timers.schedule(q, "order:9f1/expire", {"orderId": "9f1", "total": 12.5}, delay_ms=600)
        assert r and r["status"] == "scheduled", r
        assert r["timerKey"] == "order:9f1/expire" and r["queue"] == q, r
        txn, message_id = r["txn"], r["messageId"]
        peek = await client.timers.peek(q, "order:9f1/expire")
        assert peek and peek["found"] and peek["txn"] == txn and peek["messageId"] == message_id, peek
        miss = await client.timers.peek(q, "no-such-key")
        assert not miss and miss["found"] is False, miss
        [m] = await consume(client, q, 1)
        assert m["id"] == message_id and m["transactionId"] == txn, m
        assert m["data"] == {"orderId": "9f1", "total": 12.5}, m
        gone = await client.timers.cancel(q, "order:9f1/expire", txn=txn)
        assert not gone and gone["status"] == "absent" and gone["txn"] == txn, gone

        step("the builder; reschedule replaces; cancel stops")
        b = await client.timer(q).key("later").payload("a string payload").after(timedelta(hours=1)).schedule()
        assert b["status"] == "scheduled", b
        again = await client.timers.reschedule(q, "later", [1, 2, 3], delay_ms=50)
        assert again["status"] == "rescheduled" and again["messageId"] != b["messageId"], again
        [m] = await consume(client, q, 1)
        assert m["data"] == [1, 2, 3] and m["transactionId"] == again["txn"], m
        stop = await client.timer(q).key("never").payload({"x": 1}).after_ms(3_600_000).schedule()
        assert stop["ok"], stop
        cancelled = await client.timer(q).key("never").cancel()
        assert cancelled and cancelled["status"] == "cancelled", cancelled
        absent = await client.timers.cancel(q, "never")
        assert not absent and absent["status"] == "absent", absent

        step("list pages by key; list_all walks them")
        keys = [f"k{i:02d}" for i in range(7)]
        for k in keys:
            await client.timers.schedule(q, k, {"k": k}, delay_ms=3_600_000)
        page = await client.timers.list(q, limit=3)
        assert [row["timerKey"] for row in page["rows"]] == keys[:3] and page["truncated"], page
        page = await client.timers.list(q, after=page["nextAfter"], limit=3)
        assert [row["timerKey"] for row in page["rows"]] == keys[3:6], page
        everything = await client.timers.list_all(q, limit=2)
        assert [row["timerKey"] for row in everything] == keys, everything

        step("a batch is index-aligned; server-owned fields never leave the client")
        results = await client.timers.batch([client.timers.op.cancel(q, k) for k in keys] + [client.timers.op.cancel(q, "nope")])
        assert [r["status"] for r in results] == ["cancelled"] * 7 + ["absent"], results
        try:
            await client.timers.batch([{**client.timers.op.schedule(q, "x", 1, delay_ms=1), "messageId": "forged"}])
            raise AssertionError("a server-owned field was sent")
        except ValueError:
            pass

        step("the broker refuses what it cannot take, as a TimerError")
        try:
            await client.timers.schedule(q, "z", {"a": 1}, delay_ms=10, payload_zstd=True)
            raise AssertionError("payloadZstd was accepted")
        except TimerError as e:
            assert e.status == 400, e
        left = await client.timers.list(q)
        assert left["rows"] == [] and not left["truncated"], left

        step("the transaction rider: a timer set with an ack, and cancelled with another")
        src = f"pyt-{RUN}-src"
        await client.queue(src).push([{"data": {"order": 1}, "transactionId": f"{RUN}-s1"}, {"data": {"order": 2}, "transactionId": f"{RUN}-s2"}])
        m1, m2 = await client.queue(src).batch(2).wait(False).pop()
        res = await (
            client.transaction()
            .ack(m1)
            .timer(q).key("tx/remind").payload({"from": "tx"}).after_ms(300).schedule()
            .timer(q).key("tx/never").payload({"from": "tx"}).after_ms(3_600_000).schedule()
            .commit()
        )
        assert res and [r["type"] for r in res["results"]] == ["ack", "timer", "timer"], res
        promised = res["results"][1]
        assert promised["status"] == "scheduled" and promised["index"] == 1, promised
        res = await client.transaction().ack(m2).timer(q).key("tx/never").cancel().commit()
        assert res and res["results"][1]["status"] == "cancelled", res
        [m] = await consume(client, q, 1)
        assert m["id"] == promised["messageId"] and m["data"] == {"from": "tx"}, m
        assert (await client.timers.list(q))["rows"] == [], "tx/never was cancelled with the second ack"
    finally:
        await asyncio.wait_for(client.close(), 10)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: [QUEEN_TOKEN=...] timers_flow.py <broker-url>", file=sys.stderr)
        return 2
    step(f"broker {sys.argv[1]}, run id {RUN}")
    try:
        asyncio.run(asyncio.wait_for(run(sys.argv[1]), TOTAL_TIMEOUT_S))
    except BaseException as e:  # noqa: BLE001 - any failure fails the run
        traceback.print_exc()
        print(f"[timers_flow] FAIL: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    step("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
