"""Every `Admin` method of the official Python client (queen-mq 1.3.0) against a broker with
data: each must answer without an HTTP error (the client raises on one) and without an `error`
key, in the shape the client's documentation describes.

Usage: admin_walk.py <broker-url>      (QUEEN_TOKEN: a bearer token, admin, when auth is on)
"""

import asyncio
import inspect
import os
import sys
import traceback
import uuid

from queen import Queen
from queen.admin.admin import Admin

RUN = uuid.uuid4().hex[:10]
Q = f"walk-{RUN}.orders"
OTHER = f"walk-{RUN}.logs"
GROUP = f"walkers-{RUN}"
TIMEOUT_S = 90.0

called = set()


def note(msg: str) -> None:
    print(f"[admin_walk] {msg}", flush=True)


async def call(admin: Admin, method: str, *args, **kwargs):
    """Calls one Admin method and checks it answered without an error key."""
    called.add(method)
    r = await getattr(admin, method)(*args, **kwargs)
    if isinstance(r, dict):
        assert "error" not in r, f"{method}: answered an error: {r!r}"
    note(f"{method}: ok")
    return r


def keys(what: str, r, *names) -> None:
    assert isinstance(r, dict), f"{what}: expected an object, got {r!r}"
    missing = [n for n in names if n not in r]
    assert not missing, f"{what}: lacks {missing}: {r!r}"


async def fill(client: Queen):
    await client.queue(Q).config({"lease_time": 30, "retry_limit": 1}).create()
    res = await client.queue(Q).partition("p1").push(
        [{"data": {"n": i}, "transactionId": f"{RUN}-m{i}"} for i in range(1, 6)]
    )
    assert [r.get("status") for r in res] == ["queued"] * 5, res
    await client.queue(OTHER).push([{"data": {"log": 1}, "transactionId": f"{RUN}-l1"}])
    msgs = await client.queue(Q).partition("p1").group(GROUP).wait(False).batch(2).pop()
    assert len(msgs) == 2, msgs
    assert (await client.ack(msgs[0], True, {"group": GROUP})).get("success") is True
    # A dead letter: the second message nacked past its budget.
    m = msgs[1]
    await client.ack(m, False, {"group": GROUP, "error": "walk poison"})
    again = await client.queue(Q).partition("p1").group(GROUP).wait(False).batch(1).pop()
    assert again, "the nacked message comes back once"
    await client.ack(again[0], False, {"group": GROUP, "error": "walk poison"})
    return m["partitionId"]


async def walk(client: Queen) -> None:
    admin = client.admin
    pid = await fill(client)
    # The counts come from the stats snapshot: recount it before reading them.
    assert (await call(admin, "refresh_consumer_stats")).get("success") is True

    keys("get_overview", await call(admin, "get_overview"), "queues", "partitions", "messages", "lag", "throughput")
    ns = await call(admin, "get_namespaces")
    assert any(n.get("namespace") == f"walk-{RUN}" for n in ns["namespaces"]), ns
    tasks = await call(admin, "get_tasks")
    # The auto-created queue takes its namespace and task from its name.
    assert any(t.get("task") == "logs" for t in tasks["tasks"]), tasks
    listed = await call(admin, "list_queues", limit=50, search=RUN)
    assert {q["name"] for q in listed["queues"]} == {Q, OTHER}, listed
    detail = await call(admin, "get_queue", Q)
    keys("get_queue", detail, "name", "partitions", "totals")
    depth = await call(admin, "get_queue_depth", Q, group=GROUP)
    keys("get_queue_depth", depth, "pending", "partitions")
    parts = await call(admin, "get_partitions", queue=Q)
    assert {p["name"] for p in parts["partitions"]} >= {"p1"}, parts

    msgs = await call(admin, "list_messages", queue=Q)
    txids = [m["transactionId"] for m in msgs["messages"]]
    assert txids[0] == f"{RUN}-m5" and len(txids) == 5, msgs
    one = await call(admin, "get_message", pid, f"{RUN}-m3")
    assert one["payload"] == {"n": 3}, one
    retried = await call(admin, "retry_message", pid, f"{RUN}-m3")
    assert retried.get("success") is True, retried
    moved = await call(admin, "move_message_to_dlq", pid, f"{RUN}-m4")
    assert moved.get("success") is True, moved
    deleted = await call(admin, "delete_message", pid, f"{RUN}-m5")
    assert deleted.get("success") is True, deleted

    traces = await call(admin, "get_traces_for_message", pid, f"{RUN}-m3")
    assert "traces" in traces, traces
    await call(admin, "get_traces_by_name", "walk")
    await call(admin, "get_trace_names")

    keys("get_status", await call(admin, "get_status"), "throughput", "queues", "messages", "leases", "deadLetterQueue")
    stats = await call(admin, "get_queue_stats", limit=10)
    keys("get_queue_stats", stats, "queues", "pagination")
    keys("get_queue_detail", await call(admin, "get_queue_detail", Q), "queue", "partitions", "totals")
    keys("get_analytics", await call(admin, "get_analytics", interval="minute"), "dataPoints", "interval")

    groups = await call(admin, "list_consumer_groups")
    assert any(g.get("name") == GROUP for g in groups), groups
    assert (await call(admin, "refresh_consumer_stats")).get("success") is True
    mine = await call(admin, "get_consumer_group", GROUP)
    assert Q in mine, mine
    await call(admin, "get_lagging_consumers", min_lag_seconds=0)
    sought = await call(admin, "seek_consumer_group", GROUP, Q, {"toEnd": True})
    assert sought.get("success") is not False, sought

    health = await call(admin, "health")
    assert health.get("status") == "healthy", health
    assert isinstance(await call(admin, "metrics"), dict)
    for switch in ("set_maintenance_mode", "set_pop_maintenance_mode"):
        await call(admin, switch, True)
        await call(admin, switch, False)
    await call(admin, "get_maintenance_mode")
    await call(admin, "get_pop_maintenance_mode")

    keys("get_system_metrics", await call(admin, "get_system_metrics"), "timeRange", "replicas", "replicaCount")
    keys("get_worker_metrics", await call(admin, "get_worker_metrics"), "timeRange", "timeSeries")
    keys("get_postgres_stats", await call(admin, "get_postgres_stats"), "database", "tableSizes")

    cleared = await call(admin, "clear_queue", Q, partition="p1")
    assert cleared.get("success") is True, cleared
    dropped = await call(admin, "delete_consumer_group_for_queue", GROUP, Q)
    assert "error" not in dropped, dropped

    every = {n for n, f in inspect.getmembers(Admin, inspect.iscoroutinefunction) if not n.startswith("_")}
    assert len(every) == 35, sorted(every)
    assert called == every, f"not walked: {sorted(every - called)}"
    note(f"all {len(every)} Admin methods answered")


async def main(url: str) -> int:
    client = Queen(url, timeout_millis=10000, bearer_token=os.environ.get("QUEEN_TOKEN") or None)
    try:
        await asyncio.wait_for(walk(client), TIMEOUT_S)
        return 0
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        await client.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
