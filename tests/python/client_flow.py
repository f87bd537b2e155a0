"""End-to-end flow of the official Python client (queen-mq 1.3.0) against a broker.

Usage: client_flow.py <broker-url>

Drives the client exactly as an application would (its public async API only) and asserts on
what the client reports back. Exit status 0 only if every check passed. Every step is bounded by
a timeout so a broken broker makes the script fail instead of hang.
"""

import asyncio
import os
import sys
import traceback
import uuid
from datetime import datetime, timedelta, timezone

from queen import Queen

STEP_TIMEOUT_S = 30.0
TOTAL_TIMEOUT_S = 100.0

RUN = uuid.uuid4().hex[:12]


def qname(role: str) -> str:
    return f"pyc-{RUN}-{role}"


def tx(label: str) -> str:
    return f"{RUN}-{label}"


def step(msg: str) -> None:
    print(f"[client_flow] {msg}", flush=True)


def parse_ts(value) -> datetime:
    assert isinstance(value, str) and value, f"expected an ISO-8601 timestamp, got {value!r}"
    ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts


async def pop_now(client: Queen, queue: str, partition=None, batch: int = 1):
    """A non-waiting pop, as a user polling by hand would do it."""
    b = client.queue(queue)
    if partition is not None:
        b = b.partition(partition)
    return await b.wait(False).batch(batch).pop()


async def pop_one(client: Queen, queue: str, what: str, partition=None):
    msgs = await pop_now(client, queue, partition)
    assert len(msgs) == 1, (
        f"{what}: pop on {queue!r} returned {len(msgs)} messages, expected 1 "
        f"(an empty list can also mean the client swallowed a pop error; see 'Pop failed' above): {msgs!r}"
    )
    m = msgs[0]
    for key in ("transactionId", "partitionId", "leaseId", "data"):
        assert key in m, f"{what}: popped message lacks {key!r}: {m!r}"
    assert m["leaseId"], f"{what}: a leased pop must carry a non-empty leaseId: {m!r}"
    return m


async def expect_next(client: Queen, queue: str, txid: str, what: str) -> None:
    """Push a marker and check it is the next thing a pop delivers, then ack it.

    This proves everything before it on the partition was committed AND that the partition's
    lease was released (a held lease would make the pop come back empty, an uncommitted message
    would come back instead of the marker)."""
    res = await client.queue(queue).push([{"data": {"marker": txid}, "transactionId": txid}])
    assert res[0].get("status") == "queued", f"{what}: marker push not queued: {res!r}"
    m = await pop_one(client, queue, what)
    assert m["transactionId"] == txid, (
        f"{what}: expected the marker {txid!r} next, got {m['transactionId']!r} "
        f"(an earlier message was redelivered): {m!r}"
    )
    r = await client.ack(m, True)
    assert r.get("success") is True, f"{what}: ack of marker failed: {r!r}"


async def create_queue(client: Queen, name: str, options: dict) -> None:
    res = await client.queue(name).config(options).create()
    assert isinstance(res, dict), f"configure {name!r}: expected an object, got {res!r}"
    assert not res.get("error"), f"configure {name!r} reported an error: {res!r}"


# --------------------------------------------------------------------------------------------


async def step_create(client: Queen) -> None:
    await create_queue(client, qname("main"), {"lease_time": 30, "retry_limit": 3, "priority": 2})
    await create_queue(client, qname("manual"), {"lease_time": 5, "retry_limit": 3})
    await create_queue(client, qname("txsrc"), {"lease_time": 30})
    await create_queue(client, qname("txdst"), {"lease_time": 30})
    await create_queue(client, qname("dlq"), {"lease_time": 30, "retry_limit": 1})
    listed = await client.admin.list_queues()
    names = {q.get("name") for q in (listed or {}).get("queues", [])}
    for role in ("main", "manual", "txsrc", "txdst", "dlq"):
        assert qname(role) in names, f"queue {qname(role)!r} missing from admin.list_queues(): {listed!r}"
    step("create: 5 queues configured with queue(name).config({...}).create()")


async def step_push(client: Queen) -> None:
    q = qname("main")
    res = await client.queue(q).push(
        [{"data": {"n": i}, "transactionId": tx(f"t{i}")} for i in (1, 2, 3)]
    )
    assert isinstance(res, list) and len(res) == 3, f"push: expected a 3-element result list, got {res!r}"
    assert [r.get("status") for r in res] == ["queued"] * 3, f"push: expected all queued: {res!r}"

    duplicates = []

    async def on_dup(items, _err):
        duplicates.extend(items)

    res = await (
        client.queue(q)
        .push(
            [
                {"data": {"n": 1, "again": True}, "transactionId": tx("t1")},
                {"data": {"n": 4}, "transactionId": tx("t4")},
            ]
        )
        .on_duplicate(on_dup)
    )
    assert isinstance(res, list) and len(res) == 2, f"push with duplicate: expected 2 results, got {res!r}"
    assert res[0].get("status") == "duplicate", f"push: repeated transactionId must be 'duplicate': {res!r}"
    assert res[1].get("status") == "queued", f"push: new transactionId must be 'queued': {res!r}"
    assert [d["transactionId"] for d in duplicates] == [tx("t1")], (
        f"push: client's on_duplicate callback should have seen exactly t1, saw {duplicates!r}"
    )
    step("push: 4 messages queued, repeated transactionId reported as duplicate (not an error)")


async def refreshed(client: Queen) -> None:
    res = await client.admin.refresh_consumer_stats()
    assert res.get("success") is True, f"admin.refresh_consumer_stats(): {res!r}"


async def step_depth(client: Queen) -> None:
    # Right after the pushes: nothing consumed yet, one partition.
    q = qname("main")
    # The counts come from the stats snapshot: recount it now, as a dashboard's refresh does.
    await refreshed(client)
    d = await client.admin.get_queue_depth(q)
    assert (d.get("pending"), d.get("partitionsPending"), d.get("effectivePending")) == (4, 1, 4), (
        f"admin.get_queue_depth({q!r}): {d!r}"
    )
    assert d.get("partitions") == [{"partition": "Default", "pending": 4}], f"depth partitions: {d!r}"
    info = await client.admin.get_queue(q)
    assert info.get("name") == q and info.get("totals", {}).get("total") == 4, f"admin.get_queue({q!r}): {info!r}"
    g = await client.admin.get_queue_depth(q, group="not-yet")
    assert (g.get("group"), g.get("pending")) == ("not-yet", 4), f"depth for a group: {g!r}"
    step("depth: admin.get_queue_depth() and get_queue() see the 4 pushed messages")


async def step_seek(client: Queen) -> None:
    # A named group reads the 4 messages, skips to the end, then replays from the beginning.
    q = qname("main")
    first = await client.queue(q).group("replayer").wait(False).batch(10).pop()
    assert len(first) == 4, f"replayer's first read: {first!r}"
    end = await client.admin.seek_consumer_group("replayer", q, {"toEnd": True})
    assert end.get("success") is True and end.get("partitionsUpdated") == 1, f"seek to end: {end!r}"
    await refreshed(client)
    d = await client.admin.get_queue_depth(q, group="replayer")
    assert d.get("pending") == 0, f"depth after seek to end: {d!r}"
    back = await client.admin.seek_consumer_group("replayer", q, {"timestamp": "2000-01-01T00:00:00Z"})
    assert back.get("partitionsUpdated") == 1, f"seek back: {back!r}"
    again = await client.queue(q).group("replayer").wait(False).batch(10).pop()
    assert [m["transactionId"] for m in again] == [m["transactionId"] for m in first], (
        f"replay: {again!r} after {first!r}"
    )
    await refreshed(client)
    groups = await client.admin.list_consumer_groups()
    mine = [g for g in groups if g.get("name") == "replayer" and g.get("queueName") == q]
    # The replay is leased, not acknowledged: all 4 are still after the cursor.
    assert len(mine) == 1 and (mine[0].get("totalLag"), mine[0].get("state")) == (4, "Stable"), (
        f"list_consumer_groups(): {groups!r}"
    )
    detail = await client.admin.get_consumer_group("replayer")
    assert detail.get(q, {}).get("partitions", [{}])[0].get("offsetLag") == 4, f"get_consumer_group(): {detail!r}"
    gone = await client.delete_consumer_group("replayer")
    assert gone.get("success") is True and gone.get("deletedPartitions") == 1, f"delete group: {gone!r}"
    step("seek: admin.seek_consumer_group() skips a group to the end, then replays it from the start; "
         "list_consumer_groups() shows its lag; delete_consumer_group() removes it")


async def step_consume(client: Queen) -> None:
    q = qname("main")
    seen = []

    async def handler(msg):
        seen.append((msg["transactionId"], msg["data"]))

    await (
        client.queue(q).each().limit(4).timeout_millis(1000).idle_millis(10000).consume(handler)
    )
    expected = [(tx(f"t{i}"), {"n": i}) for i in (1, 2, 3, 4)]
    assert seen == expected, f"consume(each): handler saw {seen!r}, expected {expected!r}"
    step("consume: each() loop with client auto-ack delivered t1..t4 in order, duplicate not stored")

    # Batch mode: the handler gets a list, the client acks it with one /ack/batch call.
    res = await client.queue(q).push(
        [{"data": {"n": i}, "transactionId": tx(f"t{i}")} for i in (5, 6, 7)]
    )
    assert [r.get("status") for r in res] == ["queued"] * 3, f"push t5..t7: {res!r}"
    batches = []

    async def batch_handler(msgs):
        batches.append(msgs if isinstance(msgs, list) else [msgs])

    await (
        client.queue(q).batch(3).limit(3).timeout_millis(1000).idle_millis(10000).consume(batch_handler)
    )
    got = [(m["transactionId"], m["data"]) for b in batches for m in b]
    expected = [(tx(f"t{i}"), {"n": i}) for i in (5, 6, 7)]
    assert got == expected, f"consume(batch): handler saw {got!r}, expected {expected!r}"
    assert all(isinstance(b, list) for b in batches), f"consume(batch): handler expected lists: {batches!r}"

    await expect_next(client, q, tx("main-marker"), "consume auto-ack committed everything")
    step(f"consume: batch(3) loop got t5..t7 in {len(batches)} batch(es); auto-acks committed, nothing redelivered")


async def step_manual_ack(client: Queen) -> None:
    q = qname("manual")
    res = await client.queue(q).push(
        [{"data": {"m": i}, "transactionId": tx(f"m{i}")} for i in (1, 2)]
    )
    assert [r.get("status") for r in res] == ["queued"] * 2, f"push m1,m2: {res!r}"

    m1 = await pop_one(client, q, "manual pop m1")
    assert m1["transactionId"] == tx("m1") and m1["data"] == {"m": 1}, f"manual pop: expected m1: {m1!r}"
    r = await client.ack(m1, True)
    assert r.get("success") is True, f"ack(m1, True): expected success, got {r!r}"

    m2 = await pop_one(client, q, "manual pop m2")
    assert m2["transactionId"] == tx("m2"), f"manual pop: expected m2: {m2!r}"
    r = await client.ack(m2, False, {"error": "handler exploded"})
    assert r.get("success") is True, f"nack ack(m2, False, {{error}}): expected success (nack processed), got {r!r}"

    again = await pop_one(client, q, "redelivery after nack")
    assert again["transactionId"] == tx("m2"), f"nacked m2 should redeliver at once, got {again!r}"
    assert again["data"] == {"m": 2}, f"redelivered m2 payload differs: {again!r}"
    r = await client.ack(again, True)
    assert r.get("success") is True, f"ack of redelivered m2: {r!r}"

    left = await pop_now(client, q)
    assert left == [], f"after acking m1 and m2 nothing should remain: {left!r}"

    # A named partition: pushed with .partition(), popped on the partition route.
    res = await client.queue(q).partition("side").push([{"data": {"side": 1}, "transactionId": tx("side1")}])
    assert res[0].get("status") == "queued", f"push to partition 'side': {res!r}"
    s1 = await pop_one(client, q, "pop partition 'side'", partition="side")
    assert s1["transactionId"] == tx("side1") and s1["data"] == {"side": 1}, f"partition pop: {s1!r}"
    r = await client.ack(s1, True)
    assert r.get("success") is True, f"ack of partition message: {r!r}"
    step("manual: pop + ack(True) ok, ack(False, {error}) redelivered the message, named-partition pop/ack ok")


async def step_renew(client: Queen) -> None:
    q = qname("manual")  # lease_time 5 s
    res = await client.queue(q).push([{"data": {"r": 1}, "transactionId": tx("r1")}])
    assert res[0].get("status") == "queued", f"push r1: {res!r}"
    m = await pop_one(client, q, "pop for renew")
    before = datetime.now(timezone.utc)
    r = await client.renew(m)
    assert isinstance(r, dict), f"renew(msg) should return a dict, got {r!r}"
    assert r.get("success") is True, f"renew(msg): client reported failure: {r!r}"
    assert r.get("leaseId") == m["leaseId"], f"renew(msg): wrong lease renewed: {r!r} vs {m['leaseId']!r}"
    new_exp = parse_ts(r.get("newExpiresAt"))
    assert new_exp > before + timedelta(seconds=20), (
        f"renew: newExpiresAt {new_exp.isoformat()} should be well past the 5 s queue lease "
        f"(default extension is 60 s; now {before.isoformat()})"
    )
    rl = await client.renew([m])
    assert isinstance(rl, list) and len(rl) == 1 and rl[0].get("success") is True, f"renew([msg]): {rl!r}"
    assert rl[0].get("newExpiresAt"), f"renew([msg]): no newExpiresAt: {rl!r}"
    ack = await client.ack(m, True)
    assert ack.get("success") is True, f"ack after renew (lease must still be valid): {ack!r}"
    bogus = await client.renew(str(uuid.uuid4()))
    assert not bogus.get("newExpiresAt"), f"renewing an unknown lease must not report an expiry: {bogus!r}"
    step(f"renew: lease extended to {r.get('newExpiresAt')}, ack after renewal accepted")


async def step_transaction(client: Queen) -> None:
    src, dst = qname("txsrc"), qname("txdst")
    res = await client.queue(src).push([{"data": {"order": 7}, "transactionId": tx("s1")}])
    assert res[0].get("status") == "queued", f"push s1: {res!r}"
    m = await pop_one(client, src, "pop transaction source")
    assert m["transactionId"] == tx("s1"), f"tx source pop: {m!r}"

    out_id = tx("out1")
    result = await (
        client.transaction()
        .ack(m)
        .queue(dst)
        .push([{"data": {"forwarded": m["data"]}, "transactionId": out_id}])
        .commit()
    )
    assert result, f"transaction commit: falsy result {result!r}"
    assert result.get("success") is True, f"transaction commit: success must be true: {result!r}"

    got = await pop_one(client, dst, "pop pushed-by-transaction")
    assert got["transactionId"] == out_id, f"transaction push: expected {out_id!r}, got {got!r}"
    assert got["data"] == {"forwarded": {"order": 7}}, f"transaction push payload: {got!r}"
    r = await client.ack(got, True)
    assert r.get("success") is True, f"ack of transaction-pushed message: {r!r}"

    await expect_next(client, src, tx("src-marker"), "transaction ack committed s1")
    step("transaction: ack(src msg) + push(other queue) committed atomically; pushed message consumable, acked one not redelivered")


async def step_dlq(client: Queen) -> None:
    q = qname("dlq")  # retry_limit 1: first failure retries, second dead-letters
    poison = tx("d1")
    res = await client.queue(q).push([{"data": {"poison": True}, "transactionId": poison}])
    assert res[0].get("status") == "queued", f"push d1: {res!r}"

    deliveries = []

    async def failing(msg):
        deliveries.append(msg["transactionId"])
        raise RuntimeError(f"poison pill {len(deliveries)}")

    await client.queue(q).each().limit(2).timeout_millis(1000).idle_millis(8000).consume(failing)
    assert deliveries == [poison, poison], (
        f"dlq: with retry_limit 1 the failing message should be delivered exactly twice, saw {deliveries!r}"
    )
    left = await pop_now(client, q)
    assert left == [], f"dlq: after exhausting retries the message must not be redelivered: {left!r}"

    manual = tx("d2")
    res = await client.queue(q).push([{"data": {"manual": True}, "transactionId": manual}])
    assert res[0].get("status") == "queued", f"push d2: {res!r}"
    m = await pop_one(client, q, "pop for ack('dlq')")
    r = await client.ack(m, "dlq", {"error": "sent to dlq by hand"})
    assert r.get("success") is True, f"ack(msg, 'dlq'): {r!r}"
    left = await pop_now(client, q)
    assert left == [], f"dlq: a message acked 'dlq' must not be redelivered: {left!r}"

    dl = await client.queue(q).dlq().get()
    assert isinstance(dl, dict), f"dlq().get(): expected a dict, got {dl!r}"
    total = dl.get("total")
    assert isinstance(total, int) and total >= 2, f"dlq().get(): total must be >= 2, got {total!r}: {dl!r}"
    by_tx = {e.get("transactionId"): e for e in dl.get("messages", [])}
    assert poison in by_tx, f"dlq: exhausted message {poison!r} missing: {dl!r}"
    assert manual in by_tx, f"dlq: ack('dlq') message {manual!r} missing: {dl!r}"
    assert by_tx[poison].get("data") == {"poison": True}, f"dlq entry payload: {by_tx[poison]!r}"
    assert "poison pill" in (by_tx[poison].get("errorMessage") or ""), (
        f"dlq entry should carry the handler's exception text as errorMessage: {by_tx[poison]!r}"
    )
    assert by_tx[manual].get("data") == {"manual": True}, f"dlq entry payload: {by_tx[manual]!r}"
    assert by_tx[manual].get("errorMessage") == "sent to dlq by hand", f"dlq entry reason: {by_tx[manual]!r}"

    one = await client.queue(q).dlq().limit(1).get()
    assert len(one.get("messages", [])) == 1 and one.get("total") == total, f"dlq().limit(1).get(): {one!r}"
    step(f"dlq: retries exhausted via consume + ack(msg, 'dlq'); dlq().get() total={total}, both entries present")


async def step_subscription(client: Queen) -> None:
    q = qname("subs")
    res = await client.queue(q).push([{"data": {"old": i}, "transactionId": tx(f"old{i}")} for i in (1, 2)])
    assert all(r.get("status") == "queued" for r in res), f"push to {q!r}: {res!r}"
    # What the client's documentation shows: from_beginning reads the history (0.15 reads every
    # mode but "new" that way); "new" skips it.
    early = await (
        client.queue(q).group(f"{RUN}-early").subscription_mode("from_beginning").wait(False).batch(10).pop()
    )
    got = sorted(m["transactionId"] for m in early)
    assert got == [tx("old1"), tx("old2")], (
        f"subscription_mode('from_beginning') should start at the first message, got {early!r} "
        "(an empty list can also mean the client swallowed a pop error; see 'Pop failed' above)"
    )
    late = await client.queue(q).group(f"{RUN}-late").subscription_mode("new").wait(False).batch(10).pop()
    assert late == [], f"subscription_mode('new') should skip the history: {late!r}"
    step("subscription: from_beginning group read the 2 earlier messages, a 'new' group none")


async def step_encryption(client: Queen) -> None:
    q = qname("sealed")
    await create_queue(client, q, {"encryption_enabled": True, "lease_time": 30})
    res = await client.queue(q).push([{"data": {"card": "4111-1111"}, "transactionId": tx("sealed")}])
    assert res[0].get("status") == "queued", f"push to encrypted {q!r}: {res!r}"
    m = await pop_one(client, q, "encryption")
    assert m["data"] == {"card": "4111-1111"}, f"an encrypted queue pops what was pushed: {m!r}"
    r = await client.ack(m, True)
    assert r.get("success") is True, f"ack on encrypted queue: {r!r}"
    step("encryption: queue created with encryption_enabled, payload pushed and popped back intact")


async def step_trace(client: Queen) -> None:
    q = qname("traced")
    name = f"{RUN}-flow"
    res = await client.queue(q).push([{"data": {"order": 7}, "transactionId": tx("traced")}])
    assert res[0].get("status") == "queued", f"push to {q!r}: {res!r}"
    results = []
    seen = []

    async def handler(msg):
        seen.append(msg)
        results.append(await msg["trace"]({"data": {"stage": "billed"}, "traceName": name, "eventType": "processing"}))

    await client.queue(q).group(f"{RUN}-tracer").each().limit(1).timeout_millis(1000).idle_millis(10000).consume(handler)
    assert len(results) == 1 and results[0].get("success") is True and results[0].get("traceId"), (
        f"message.trace() in a consume loop: {results!r}"
    )
    m = seen[0]
    mine = await client.admin.get_traces_for_message(m["partitionId"], m["transactionId"])
    got = [(t["event_type"], t["data"], t["consumer_group"], t["trace_names"]) for t in mine["traces"]]
    assert got == [("processing", {"stage": "billed"}, f"{RUN}-tracer", [name])], f"get_traces_for_message: {mine!r}"
    named = await client.admin.get_traces_by_name(name)
    assert named["total"] == 1 and named["traces"][0]["message_payload"] == {"order": 7}, f"get_traces_by_name: {named!r}"
    names = await client.admin.get_trace_names()
    assert name in [n["trace_name"] for n in names["trace_names"]], f"get_trace_names: {names!r}"
    step("trace: message.trace() from a consume handler recorded; admin reads it per message, by name and in the names")


async def step_maintenance(client: Queen) -> None:
    q = qname("held")
    r = await client.admin.set_pop_maintenance_mode(True)
    assert r.get("popMaintenanceMode") is True, f"set_pop_maintenance_mode(True): {r!r}"
    assert (await client.admin.get_pop_maintenance_mode()).get("popMaintenanceMode") is True
    res = await client.queue(q).push([{"data": {"k": 1}, "transactionId": tx("held1")}])
    assert res[0].get("status") == "queued", f"push under pop maintenance: {res!r}"
    paused = await pop_now(client, q)
    assert paused == [], f"a pop under pop maintenance delivers nothing: {paused!r}"
    r = await client.admin.set_pop_maintenance_mode(False)
    assert r.get("popMaintenanceMode") is False, f"set_pop_maintenance_mode(False): {r!r}"

    r = await client.admin.set_maintenance_mode(True)
    assert r.get("maintenanceMode") is True, f"set_maintenance_mode(True): {r!r}"
    res = await client.queue(q).push([{"data": {"k": 2}, "transactionId": tx("held2")}])
    assert res[0].get("status") == "buffered", f"push under push maintenance: {res!r}"
    m = await client.admin.get_maintenance_mode()
    assert m.get("maintenanceMode") is True and m.get("bufferedMessages") == 1, f"get_maintenance_mode(): {m!r}"
    first = await pop_one(client, q, "maintenance: the message pushed before")
    assert first["transactionId"] == tx("held1"), f"only the earlier message is visible: {first!r}"
    assert (await client.ack(first, True)).get("success") is True
    r = await client.admin.set_maintenance_mode(False)
    assert r.get("maintenanceMode") is False, f"set_maintenance_mode(False): {r!r}"
    for _ in range(100):
        if (await client.admin.get_maintenance_mode()).get("bufferedMessages") == 0:
            break
        await asyncio.sleep(0.05)
    held = await pop_one(client, q, "maintenance: the buffered message, appended")
    assert held["transactionId"] == tx("held2") and held["data"] == {"k": 2}, f"{held!r}"
    assert (await client.ack(held, True)).get("success") is True
    step("maintenance: pop maintenance paused pops; push maintenance buffered a push, appended when switched off")


async def step_expiry(client: Queen) -> None:
    # As the client configures retention: retention_seconds, never retentionEnabled (the
    # harness runs the broker with IMPLICIT_RETENTION and a short retention clock).
    q = qname("expiring")
    await create_queue(client, q, {"retention_seconds": 1})
    res = await client.queue(q).push([{"data": {"old": True}, "transactionId": tx("expired")}])
    assert res[0].get("status") == "queued", f"push to {q!r}: {res!r}"
    await asyncio.sleep(1.3)
    res = await client.queue(q).push([{"data": {"old": False}, "transactionId": tx("kept")}])
    assert res[0].get("status") == "queued", f"push to {q!r}: {res!r}"
    for _ in range(100):
        await refreshed(client)
        depth = await client.admin.get_queue_depth(q)
        if depth.get("pending") == 1:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"the expired message was never deleted: {depth!r}")
    m = await pop_one(client, q, "expiry")
    assert m["transactionId"] == tx("kept"), f"only the message within retention is left: {m!r}"
    assert (await client.ack(m, True)).get("success") is True
    step("expiry: a queue made with retention_seconds=1 lost its old message; the new one was delivered")


async def step_delete(client: Queen) -> None:
    roles = ("main", "manual", "txsrc", "txdst", "dlq", "subs", "sealed", "traced", "held", "expiring")
    for role in roles:
        res = await client.queue(qname(role)).delete()
        assert not (isinstance(res, dict) and res.get("error")), f"delete {qname(role)!r}: {res!r}"
    listed = await client.admin.list_queues()
    names = {q.get("name") for q in (listed or {}).get("queues", [])}
    for role in roles:
        assert qname(role) not in names, f"queue {qname(role)!r} still listed after delete(): {listed!r}"
    left = await pop_now(client, qname("main"))
    assert left == [], f"pop on a deleted queue should find nothing: {left!r}"
    step("delete: all queues deleted through queue(name).delete()")


async def step_metrics(client: Queen) -> None:
    # After every other step: the broker has counted this client's pushes.
    m = await client.admin.metrics()
    assert isinstance(m, dict), f"admin.metrics(): {m!r}"
    assert m["messages"]["total"] > 0 and m["requests"]["total"] > 0, f"admin.metrics(): {m!r}"
    assert m["database"]["poolSize"] > 0 and m["memory"]["rss"] > 0, f"admin.metrics(): {m!r}"
    step(f"metrics: admin.metrics() counts {m['messages']['total']} messages pushed")
    # The fleet's figures (admin routes; the flow's token, when there is one, is admin's).
    sm = await client.admin.get_system_metrics()
    for key in ("timeRange", "replicas", "replicaCount", "bucketMinutes", "pointCount"):
        assert key in sm, f"admin.get_system_metrics(): {key} missing: {sm!r}"
    wm = await client.admin.get_worker_metrics()
    for key in ("timeRange", "bucketMinutes", "pointCount", "timeSeries", "workers", "queues", "summary"):
        assert key in wm, f"admin.get_worker_metrics(): {key} missing: {wm!r}"
    pg = await client.admin.get_postgres_stats()
    # The 20 largest tables, largest first (in a database this small, which of the broker's
    # many near-empty tables make the 20 is not the point).
    sizes = [t.get("totalBytes") for t in pg.get("tableSizes", [])]
    assert 0 < len(sizes) <= 20 and sizes == sorted(sizes, reverse=True), (
        f"admin.get_postgres_stats(): tableSizes: {pg.get('tableSizes')!r}"
    )
    step("fleet: admin.get_system_metrics(), get_worker_metrics() and get_postgres_stats() answer")


STEPS = [
    ("create", step_create),
    ("push", step_push),
    ("depth", step_depth),
    ("seek", step_seek),
    ("consume", step_consume),
    ("manual ack", step_manual_ack),
    ("renew", step_renew),
    ("transaction", step_transaction),
    ("dlq", step_dlq),
    ("subscription", step_subscription),
    ("encryption", step_encryption),
    ("trace", step_trace),
    ("maintenance", step_maintenance),
    ("expiry", step_expiry),
    ("delete", step_delete),
    ("metrics", step_metrics),
]


async def run(url: str) -> None:
    # With authentication on, the harness passes a token; the client sends it as a bearer.
    client = Queen(url, timeout_millis=10000, bearer_token=os.environ.get("QUEEN_TOKEN") or None)
    try:
        for name, fn in STEPS:
            try:
                await asyncio.wait_for(fn(client), STEP_TIMEOUT_S)
            except asyncio.TimeoutError:
                raise AssertionError(f"step {name!r} timed out after {STEP_TIMEOUT_S}s") from None
    finally:
        await asyncio.wait_for(client.close(), 10)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: [QUEEN_TOKEN=...] client_flow.py <broker-url>", file=sys.stderr)
        return 2
    url = sys.argv[1]
    step(f"broker {url}, run id {RUN}")
    try:
        asyncio.run(asyncio.wait_for(run(url), TOTAL_TIMEOUT_S))
    except AssertionError as e:
        traceback.print_exc()
        print(f"[client_flow] FAIL: {e}", file=sys.stderr, flush=True)
        return 1
    except BaseException as e:  # noqa: BLE001 - any other failure is a failure too
        traceback.print_exc()
        print(f"[client_flow] ERROR: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    step("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
