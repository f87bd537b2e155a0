"""Key/value (spec §18.1) through the official Python client (queen-mq 1.3.0): `client.kv.*`
and the transaction builder's `kv` rider and `once` gate, against a live broker.

Usage: kv_flow.py <broker-url>

Each check compares what the client returns with what the calls before it determine, exactly.
Exit status 0 only if every check passed.
"""

import asyncio
import sys
import traceback
import uuid
import os

from queen import Queen
from queen.errors import KvError

RUN = uuid.uuid4().hex[:10]
TOKEN = os.environ.get("QUEEN_TOKEN") or None


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def reads_and_writes(client):
    kv = client.kv
    ns = f"py-{RUN}"
    w = await kv.put(ns, "cfg", {"limit": 10, "tags": ["a"]}, forever=True)
    check(w and w["applied"] and w["version"] == 1, f"put: {w}")
    r = await kv.get(ns, "cfg")
    check(r and r["value"] == {"limit": 10, "tags": ["a"]} and r["version"] == 1, f"get: {r}")
    miss = await kv.get(ns, "nope")
    check(not miss and miss["found"] is False, f"a miss is falsy: {miss}")
    # expect fences: a stale version loses and reads the current row in the same answer.
    lost = await kv.put(ns, "cfg", {"limit": 0}, forever=True, expect=7)
    check(not lost and lost["reason"] == "version" and lost["version"] == 1, f"fenced: {lost}")
    won = await kv.put(ns, "cfg", {"limit": 20}, ttl_seconds=3600, expect=1)
    check(won and won["version"] == 2 and won["expiresAt"], f"expect matched: {won}")
    # putIfAbsent and once: exactly one winner.
    check((await kv.put_if_absent(ns, "lock", "me", ttl_seconds=30))["applied"], "first putIfAbsent")
    check(not (await kv.put_if_absent(ns, "lock", "you", ttl_seconds=30)), "second putIfAbsent")
    check(await kv.once(ns, "gate", forever=True) is True, "once: first")
    check(await kv.once(ns, "gate", forever=True) is False, "once: second")
    # incr as a limiter: admitted up to max, then refused without spending.
    got = [bool(await kv.incr(ns, "hits", max=3, ttl_seconds=60)) for _ in range(5)]
    check(got == [True, True, True, False, False], f"limiter: {got}")
    check((await kv.get(ns, "hits"))["value"] == 3, "the refused incrs spent nothing")
    # getMany and getPrefix, walked with list_all.
    for i in range(12):
        await kv.put(ns, f"user:{i:02d}", i, forever=True)
    many = await kv.get_many(ns, ["user:01", "ghost", "user:02"])
    check([r["key"] for r in many["rows"]] == ["user:01", "user:02"], f"getMany rows: {many}")
    check(many["missing"] == ["ghost"], f"getMany missing: {many}")
    page = await kv.get_prefix(ns, "user:", limit=5)
    check(page["truncated"] and page["nextAfter"] == "user:04", f"a page: {page}")
    rows = await kv.list_all(ns, "user:", limit=5)
    check([r["value"] for r in rows] == list(range(12)), f"list_all: {rows}")
    keys = await kv.get_prefix(ns, "user:1", keys_only=True)
    check([r["key"] for r in keys["rows"]] == ["user:10", "user:11"] and "value" not in keys["rows"][0], f"keysOnly: {keys}")
    # delete, idempotent.
    check((await kv.delete(ns, "cfg"))["applied"], "delete")
    gone = await kv.delete(ns, "cfg")
    check(not gone and gone["reason"] == "absent", f"delete again: {gone}")
    # A batch is one transaction, index-aligned.
    results = await kv.batch([kv.op.put(ns, "b", 1, forever=True), kv.op.incr(ns, "b", delta=2, forever=True), kv.op.get(ns, "b")])
    check([r.get("value") for r in results] == [1, 3, 3], f"batch: {results}")


async def refusals_raise_kv_error_with_a_code(client):
    ns = f"py-{RUN}"
    try:
        await client.kv.batch([{"op": "put", "ns": ns, "key": "k", "value": 1}])
    except KvError as e:
        check(e.status == 400 and e.code == "kv_expiry_not_specified", f"code: {e.code} {e}")
    else:
        raise AssertionError("a put without an expiry was accepted")
    try:
        await client.kv.batch([{"op": "getPrefix", "ns": ns, "prefix": ""}])
    except KvError as e:
        check(e.code == "kv_prefix_required", f"code: {e.code}")
    else:
        raise AssertionError("an empty prefix was accepted")


async def the_transaction_rider_commits_with_the_ack(client):
    src, out, ns = f"py-kv-src-{RUN}", f"py-kv-out-{RUN}", f"py-tx-{RUN}"
    await client.queue(src).push([{"data": {"order": 1}, "transactionId": f"{RUN}-o1"}])
    [m] = await client.queue(src).wait(False).batch(1).pop()
    # The gate first, then the ack, the push and a counter: all or nothing.
    res = await (
        client.transaction()
        .once(ns, f"seen:{m['transactionId']}", ttl_seconds=3600)
        .ack(m)
        .queue(out).push([{"data": {"forwarded": 1}, "transactionId": f"{RUN}-f1"}])
        .kv.incr(ns, "handled", forever=True)
        .commit()
    )
    check(res and res["success"], f"committed: {res}")
    kinds = [r["type"] for r in res["results"]]
    check(kinds == ["ack", "push", "kv", "kv"], f"results after the operations: {kinds}")
    check(res["results"][3]["value"] == 1, f"incr in the bundle: {res['results'][3]}")
    # The same message again (a redelivery): the gate is taken, the bundle is answered, not
    # raised, and nothing of it is written.
    await client.queue(src).push([{"data": {"order": 2}, "transactionId": f"{RUN}-o2"}])
    [m2] = await client.queue(src).wait(False).batch(1).pop()
    again = await (
        client.transaction()
        .once(ns, f"seen:{m['transactionId']}", ttl_seconds=3600)
        .ack(m2)
        .kv.incr(ns, "handled", forever=True)
        .commit()
    )
    check(not again and again["reason"] == "kv_precondition", f"gated: {again}")
    check(again["failedIndex"] == 1 and again["kvReason"] == "version", f"which op: {again}")
    check((await client.kv.get(ns, "handled"))["value"] == 1, "the gated bundle wrote nothing")
    ack = await client.ack(m2, True)
    check(ack, f"m2 is still to be acked: {ack}")


async def run(url):
    client = Queen(url, timeout_millis=10000, bearer_token=TOKEN)
    try:
        for scenario in (reads_and_writes, refusals_raise_kv_error_with_a_code, the_transaction_rider_commits_with_the_ack):
            await scenario(client)
            print(f"ok: {scenario.__name__}", flush=True)
    finally:
        await client.close()


def main() -> int:
    url = sys.argv[1]
    try:
        asyncio.run(asyncio.wait_for(run(url), 90))
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
