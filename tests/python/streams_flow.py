"""Queen Streams (spec §16) through the official Python client's `queen.streams` SDK
(queen-mq 1.3.0) against a live broker.

Usage: streams_flow.py <broker-url>
       streams_flow.py worker <broker-url> <query-id> <source> <sink> <delay-ms> <batch>

Every scenario builds a pipeline with `Stream.from_(...)...run(query_id=..., url=...)`, feeds it
known input, and compares what reaches the sink queue (and what stays in the query's state) with
what the input determines, exactly: a window lost, counted twice or holding a wrong aggregate
fails the run. Event time comes from the payloads wherever the result must not depend on
timing. Exit status 0 only if every check passed; every scenario is bounded by a timeout.

Scenarios: 1 tumbling sums over four partitions (plus state/get's filters, and a retried cycle:
the last replayed, an older one refused, neither applied); 2 session windows closed by the gap
(event time) and by the idle flush (processing time); 3 event time with allowed lateness; 4 a
worker killed between cycles and mid-stream, resumed; 5 a changed configuration refused (409)
and reset; 6 two queries on one source queue; 7 processing-time windows closed by the idle flush;
8 a token-bucket gate's partial acks.

The `worker` form runs one stream until it is killed; scenario 4 runs it as a child process and
SIGKILLs it, to restart the query in a new process.
"""

import asyncio
import copy
import json
import os
import signal
import sys
import time
import traceback
import uuid

import httpx

from queen import Queen
from queen.streams import Stream, token_bucket_gate
from queen.streams.operators._window_common import to_iso
from queen.streams.runtime.register import StreamsConfigHashMismatch
from queen.streams.runtime.runner import _parse_iso_ms

SCENARIO_TIMEOUT_S = 60.0
TOTAL_TIMEOUT_S = 170.0

RUN = uuid.uuid4().hex[:10]
# Event times: a fixed epoch, a multiple of every window size used below (5 s, 10 s).
T0 = 1_700_000_000_000
SEP = "\u001f"
WM_KEY = "__wm__"
TOKEN = os.environ.get("QUEEN_TOKEN") or None


def name(role: str) -> str:
    return f"pys-{RUN}-{role}"


def step(msg: str) -> None:
    print(f"[streams_flow] {msg}", flush=True)


# ------------------------------------------------------------------------------ plumbing


class Log:
    """A logger for the runner (its `logger=` option): keeps what it reports."""

    def __init__(self, label: str):
        self.label = label
        self.infos = []
        self.errors = []

    def info(self, msg, ctx=None):
        self.infos.append((msg, ctx))

    def warn(self, msg, ctx=None):
        pass

    def error(self, msg, ctx=None):
        self.errors.append((msg, ctx))
        print(f"[streams_flow] runner {self.label} error: {msg} {ctx}", file=sys.stderr, flush=True)

    def registered(self) -> dict:
        regs = [ctx for msg, ctx in self.infos if msg == "query registered"]
        assert len(regs) == 1, f"{self.label}: expected one 'query registered' report: {self.infos!r}"
        return regs[0]


async def run_stream(stream: Stream, query_id: str, url: str, log: Log, record: list = None, **opts):
    """Starts the stream. With `record`, every cycle the runner commits is appended to it as
    (request body, answer): the recorder is in place before the runner's loop first runs."""
    runner = await stream.run(
        query_id=query_id,
        url=url,
        bearer_token=TOKEN,
        logger=log,
        max_wait_millis=opts.pop("max_wait_millis", 200),
        **opts,
    )
    if record is not None:
        post = runner.http.post

        async def recording(path, body):
            res = await post(path, body)
            if path == "/streams/v1/cycle":
                record.append((copy.deepcopy(body), copy.deepcopy(res)))
            return res

        runner.http.post = recording
    return runner


async def stop(runner, log: Log) -> dict:
    await asyncio.wait_for(runner.stop(), 15)
    m = runner.metrics()
    assert not log.errors, f"{log.label}: the runner reported errors: {log.errors!r}; metrics {m!r}"
    assert m["errorsTotal"] == 0, f"{log.label}: errorsTotal {m['errorsTotal']}: {m!r}"
    return m


async def wait_until(pred, what: str, timeout: float = 30.0, every: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(every)


async def create_queue(client: Queen, queue: str, options: dict) -> None:
    res = await client.queue(queue).config(options).create()
    assert isinstance(res, dict) and not res.get("error"), f"configure {queue!r}: {res!r}"


async def push_events(client: Queen, queue: str, partition: str, events: list) -> None:
    """Pushes `events` (payloads) to one partition, in order, in one call."""
    items = [{"data": e, "transactionId": f"{RUN}-{uuid.uuid4().hex}"} for e in events]
    res = await client.queue(queue).partition(partition).push(items)
    assert [r.get("status") for r in res] == ["queued"] * len(items), f"push to {queue}/{partition}: {res!r}"


class Sink:
    """Reads a sink queue in queue mode, acking what it reads: every payload delivered, with its
    partition, in delivery order."""

    def __init__(self, client: Queen, queue: str):
        self.client = client
        self.queue = queue
        self.items = []  # (partition, payload)

    async def drain(self) -> int:
        got = 0
        while True:
            msgs = await self.client.queue(self.queue).batch(500).partitions(16).wait(False).pop()
            if not msgs:
                return got
            for m in msgs:
                self.items.append((m.get("partition"), m.get("data")))
            r = await self.client.ack(msgs, True)
            assert r is not None, f"ack of sink messages on {self.queue}: {r!r}"
            got += len(msgs)

    async def wait_for(self, n: int, timeout: float = 30.0) -> None:
        async def enough():
            await self.drain()
            assert len(self.items) <= n, (
                f"sink {self.queue}: {len(self.items)} messages, more than the {n} expected: {self.items!r}"
            )
            return len(self.items) == n

        try:
            await wait_until(enough, f"{n} messages on {self.queue}", timeout, every=0.1)
        except AssertionError as e:
            raise AssertionError(f"{e}; got {len(self.items)}: {self.items!r}") from None

    async def settle(self, n: int, quiet: float = 1.0) -> None:
        """After `quiet` seconds more, still exactly `n` messages (none arrived late or twice)."""
        await asyncio.sleep(quiet)
        await self.drain()
        assert len(self.items) == n, f"sink {self.queue}: {len(self.items)} messages, expected {n}: {self.items!r}"


class Api:
    """The streams routes called directly, to look at what the SDK stored."""

    def __init__(self, url: str):
        headers = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}
        self.http = httpx.AsyncClient(base_url=url, headers=headers, timeout=15)

    async def close(self):
        await self.http.aclose()

    async def post(self, path: str, body: dict, status: int = 200) -> dict:
        r = await self.http.post(path, json=body)
        assert r.status_code == status, f"POST {path} {body!r}: {r.status_code} {r.text}, expected {status}"
        return r.json()

    async def get(self, path: str) -> dict:
        r = await self.http.get(path)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()

    async def state(self, query_id: str, partition_id: str, **filters) -> dict:
        body = await self.post("/streams/v1/state/get",
                               {"query_id": query_id, "partition_id": partition_id, **filters})
        assert body.get("success") is True, f"state/get: {body!r}"
        return {row["key"]: row["value"] for row in body["rows"]}

    async def partition_rows(self, query_id: str) -> dict:
        """The query's partitions as the console lists them: name -> row."""
        body = await self.get(f"/streams/v1/queries/{query_id}/partitions")
        return {p["partition"]: p for p in body["partitions"]}

    async def partitions(self, query_id: str) -> dict:
        """The query's source partitions that had a cycle: name -> partition id."""
        body = await self.get(f"/streams/v1/queries/{query_id}/partitions")
        return {p["partition"]: p["partition_id"] for p in body["partitions"]}


def tumbling_key(seconds, window_start: int, key: str) -> str:
    return f"tumb:{seconds}{SEP}{to_iso(window_start)}{SEP}{key}"


def windowed_sum(window_seconds: int, sink_queue: Queen, source, **window_opts) -> Stream:
    """Event time from `data.t`; per window: sum of `data.v` and the count; the sink payload names
    the window and the source partition."""
    return (
        Stream.from_(source)
        .window_tumbling(seconds=window_seconds, event_time=lambda m: m["data"]["t"], **window_opts)
        .aggregate({"sum": lambda d: d["v"], "count": lambda d: 1})
        .map(lambda acc, ctx: {"ws": ctx["windowStart"], "we": ctx["windowEnd"], "p": ctx["partition"],
                               "sum": acc["sum"], "count": acc["count"]})
        .to(sink_queue)
    )


def expected_windows(events_by_partition: dict, window_ms: int, open_from: dict) -> dict:
    """(partition, windowStart) -> (sum, count) of the windows that start before
    `open_from[partition]` (the windows that must have closed)."""
    out = {}
    for p, events in events_by_partition.items():
        for e in events:
            ws = e["t"] // window_ms * window_ms
            if ws >= open_from[p]:
                continue
            s, c = out.get((p, ws), (0, 0))
            out[(p, ws)] = (s + e["v"], c + 1)
    return out


def emitted_windows(sink: Sink, window_ms: int) -> dict:
    got = {}
    for partition, d in sink.items:
        assert d["p"] == partition, f"sink item on partition {partition!r} names {d['p']!r}: {d!r}"
        assert d["we"] - d["ws"] == window_ms and d["ws"] % window_ms == 0, f"not a {window_ms} ms window: {d!r}"
        k = (partition, d["ws"])
        assert k not in got, f"window {k} emitted twice: {got[k]!r} and {(d['sum'], d['count'])!r}"
        got[k] = (d["sum"], d["count"])
    return got


def compare(got: dict, want: dict, what: str) -> None:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = sorted((k, got[k], want[k]) for k in set(got) & set(want) if got[k] != want[k])
    assert not (missing or extra or wrong), (
        f"{what}: missing windows {missing}, unexpected windows {extra}, "
        f"wrong aggregates (window, got, want) {wrong}"
    )


# ------------------------------------------------------------------------------ scenarios


async def scenario_tumbling(client: Queen, url: str, api: Api) -> None:
    """1. Tumbling 5 s windows over 4 partitions, several cycles per window."""
    src, sink_q, qid = name("tumb-src"), name("tumb-sink"), name("tumb")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})
    events = {}
    closer_t = T0 + 100_000
    for pi in range(4):
        p = f"p{pi}"
        # 23 events one second apart (windows of 5, 5, 5, 5 and 3), then one far ahead that
        # closes them all and stays open itself.
        evs = [{"t": T0 + i * 1000 + 100 * pi, "v": (pi + 1) * 1000 + 7 * i + 1} for i in range(23)]
        evs.append({"t": closer_t + 100 * pi, "v": 5 + pi})
        events[p] = evs
        await push_events(client, src, p, evs)
    total = sum(len(e) for e in events.values())

    want = expected_windows(events, 5000, {p: closer_t for p in events})
    assert len(want) == 20
    sink = Sink(client, sink_q)
    log = Log("tumbling")
    cycles = []
    runner = await run_stream(windowed_sum(5, client.queue(sink_q), client.queue(src)), qid, url, log,
                              record=cycles, batch_size=3, max_partitions=4)
    reg = log.registered()
    assert reg["fresh"] is True and reg["didReset"] is False, f"first registration: {reg!r}"
    await sink.wait_for(len(want))
    await wait_until(lambda: runner.metrics()["messagesTotal"] == total, f"the runner to consume {total} messages")
    await sink.settle(len(want))
    m = await stop(runner, log)
    assert m["messagesTotal"] == total and m["lateEventsTotal"] == 0, f"metrics: {m!r}"
    compare(emitted_windows(sink, 5000), want, "tumbling sums")
    # Within each partition the windows were emitted in order.
    for p in events:
        starts = [d["ws"] for part, d in sink.items if part == p]
        assert starts == sorted(starts), f"{p}: windows out of order: {starts}"

    # What stays: each partition's open window (the closer) and its watermark.
    server_qid = m["serverQueryId"]
    pids = await api.partitions(server_qid)
    assert sorted(pids) == sorted(events), f"query partitions: {pids!r}"
    for pi, p in enumerate(sorted(events)):
        st = await api.state(server_qid, pids[p])
        ct = closer_t + 100 * pi
        want_state = {
            tumbling_key(5, closer_t, pids[p]): {"acc": {"sum": 5 + pi, "count": 1}, "windowStart": closer_t,
                                                  "windowEnd": closer_t + 5000},
            WM_KEY: {"eventTimeMs": ct},
        }
        assert st == want_state, f"{p}: state {st!r}, expected {want_state!r}"

    # state/get's filters on p0's two rows.
    p0 = pids["p0"]
    open_key = tumbling_key(5, closer_t, p0)
    for filters, keys in [
        ({"keys": [open_key, "absent"]}, [open_key]),
        ({"key_prefix": "tumb:5" + SEP}, [open_key]),
        ({"key_prefix": "__"}, [WM_KEY]),
        ({"ripe_at_or_before": closer_t + 5000}, [open_key]),  # windowEnd <= it; __wm__ has none
        ({"ripe_at_or_before": closer_t + 4999}, []),
        ({"key_prefix": "tumb:5" + SEP, "ripe_at_or_before": closer_t + 5000.5}, [open_key]),
    ]:
        got_keys = sorted(await api.state(server_qid, p0, **filters))
        assert got_keys == keys, f"state/get {filters!r}: keys {got_keys!r}, expected {keys!r}"

    # A byte-identical retry of p0's last committed cycle is answered from storage and applies
    # nothing; a retry of an earlier one is refused and applies nothing either.
    mine = [(b, r) for b, r in cycles if b["partition_id"] == p0]
    assert mine and all(r.get("success") is True for _, r in mine), f"p0's cycles: {mine!r}"
    assert sum(1 for b, _ in mine if b["ack"]) >= 8, f"batch 3 over 24 messages: {len(mine)} cycles"
    last_body, last_answer = mine[-1]
    earlier_body, _ = next((b, r) for b, r in reversed(mine[:-1]) if b["ack"] and b["state_ops"])
    before_rows = (await api.partition_rows(server_qid))["p0"]
    before_state = await api.state(server_qid, p0)
    again = await api.post("/streams/v1/cycle", last_body)
    assert again == last_answer, f"replay of the last cycle answered {again!r}, first answer {last_answer!r}"
    stale = await api.post("/streams/v1/cycle", earlier_body)
    assert stale.get("success") is False and stale.get("error"), f"retry of an earlier cycle: {stale!r}"
    assert await api.state(server_qid, p0) == before_state, "a retried cycle changed the state"
    after_rows = (await api.partition_rows(server_qid))["p0"]
    assert after_rows["cycles"] == before_rows["cycles"] and after_rows["state_ops"] == before_rows["state_ops"], \
        f"retried cycles were counted as applied: {before_rows!r} -> {after_rows!r}"
    assert before_rows["cycles"] == len(mine) and before_rows["state_rows"] == 2, \
        f"console row for p0 {before_rows!r}, {len(mine)} cycles committed"
    await sink.settle(len(want), quiet=0.2)
    step(f"1 tumbling: {len(want)} windows over 4 partitions, each sum exact, none twice; open windows kept in "
         "state; state/get filters; a retried last cycle replayed, an older one refused, neither applied")


async def scenario_session(client: Queen, url: str, api: Api) -> None:
    """2. Session windows: (a) event time, a session closed by a later event past the gap;
    (b) processing time, sessions closed by the idle flush once the gap passes."""
    # (a) event time, gap 3 s.
    src, sink_q, qid = name("sess-src"), name("sess-sink"), name("sess")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})

    def session_stream(source, sink_queue, **opts):
        return (
            Stream.from_(source)
            .key_by(lambda m: m["data"]["user"])
            .window_session(**opts)
            .aggregate({"sum": lambda d: d["v"], "count": lambda d: 1})
            .map(lambda acc, ctx: {"user": ctx["key"], "start": ctx["windowStart"], "end": ctx["windowEnd"],
                                   "sum": acc["sum"], "count": acc["count"]})
            .to(sink_queue)
        )

    evs = [
        {"user": "carol", "t": T0 + 0, "v": 1},
        {"user": "carol", "t": T0 + 1000, "v": 2},
        {"user": "dave", "t": T0 + 1500, "v": 100},
        {"user": "carol", "t": T0 + 2000, "v": 4},
        # 8 s after carol's last event: past the 3 s gap, closes her first session.
        {"user": "carol", "t": T0 + 10_000, "v": 8},
        {"user": "carol", "t": T0 + 11_000, "v": 16},
    ]
    await push_events(client, src, "s", evs)
    sink = Sink(client, sink_q)
    log = Log("session-event-time")
    runner = await run_stream(
        session_stream(client.queue(src), client.queue(sink_q), gap=3, event_time=lambda m: m["data"]["t"]),
        qid, url, log, batch_size=2, max_partitions=1)
    # The watermark (11 s) passes dave's session end (1.5 + 3 s) too, so his closes as well.
    await sink.wait_for(2)
    await wait_until(lambda: runner.metrics()["messagesTotal"] == len(evs), "the session runner to consume its input")
    await sink.settle(2, quiet=0.5)
    m = await stop(runner, log)
    got = sorted((p, d["user"], d["start"], d["end"], d["sum"], d["count"]) for p, d in sink.items)
    want = sorted([
        ("s", "carol", T0, T0 + 5000, 7, 3),
        ("s", "dave", T0 + 1500, T0 + 4500, 100, 1),
    ])
    assert got == want, f"event-time sessions: got {got}, want {want}"
    pid = (await api.partitions(m["serverQueryId"]))["s"]
    st = await api.state(m["serverQueryId"], pid)
    want_state = {
        f"sess:3{SEP}open{SEP}carol": {"acc": {"sum": 24, "count": 2}, "sessionStart": T0 + 10_000,
                                        "lastEventTime": T0 + 11_000},
        WM_KEY: {"eventTimeMs": T0 + 11_000},
    }
    assert st == want_state, f"session state {st!r}, expected {want_state!r}"

    # (b) processing time (the broker's createdAt), gap 1 s, idle flush every 150 ms.
    src, sink_q, qid = name("psess-src"), name("psess-sink"), name("psess")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})
    sink = Sink(client, sink_q)
    log = Log("session-processing-time")
    runner = await run_stream(
        session_stream(client.queue(src), client.queue(sink_q), gap=1, idle_flush_ms=150),
        qid, url, log, batch_size=50, max_partitions=1)
    await push_events(client, src, "s", [{"user": "erin", "v": 1}, {"user": "erin", "v": 2},
                                         {"user": "frank", "v": 10}])
    # Nothing more arrives: the flush closes both sessions once a second has passed.
    await sink.wait_for(2, timeout=10)
    await asyncio.sleep(0.3)
    await push_events(client, src, "s", [{"user": "erin", "v": 40}])
    await sink.wait_for(3, timeout=10)
    await sink.settle(3, quiet=1.5)
    m = await stop(runner, log)
    assert m["flushCyclesTotal"] >= 2, f"sessions were to be closed by idle flush cycles: {m!r}"
    got = [(d["user"], d["sum"], d["count"]) for _, d in sink.items]
    assert sorted(got[:2]) == [("erin", 3, 2), ("frank", 10, 1)] and got[2] == ("erin", 40, 1), (
        f"processing-time sessions: {sink.items!r}"
    )
    for _, d in sink.items:
        assert d["end"] - d["start"] >= 1000, f"a session ends a gap after its last event: {d!r}"
    pid = (await api.partitions(m["serverQueryId"]))["s"]
    st = await api.state(m["serverQueryId"], pid)
    assert st == {}, f"every session was flushed, yet state holds {st!r}"
    step("2 sessions: closed by a later event past the gap (event time) and by the idle flush "
         "(processing time), aggregates exact")


async def scenario_lateness(client: Queen, url: str, api: Api) -> None:
    """3. Event time, 10 s windows, allowed lateness 5 s: one late event admitted, one dropped."""
    src, sink_q, qid = name("late-src"), name("late-sink"), name("late")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})
    s = 1000
    # (t, v): one message a cycle (batch 1); the watermark after each is max(t) - 5 s.
    evs = [
        (1 * s, 1),     # W0                          wm  -4
        (8 * s, 2),     # W0                          wm   3
        (12 * s, 4),    # W1                          wm   7
        (9 * s, 8),     # W0, 3 s behind max: 9 >= wm 7, admitted
        (14 * s, 16),   # W1                          wm   9
        (20 * s, 32),   # W2                          wm  15: W0 closes (11)
        (13 * s, 64),   # W1, 7 s behind max: 13 < wm 15, dropped
        (40 * s, 256),  # W4                          wm  35: W1 (20) and W2 (32) close
    ]
    await push_events(client, src, "l", [{"t": T0 + t, "v": v} for t, v in evs])
    sink = Sink(client, sink_q)
    log = Log("lateness")
    runner = await run_stream(
        windowed_sum(10, client.queue(sink_q), client.queue(src), allowed_lateness=5),
        qid, url, log, batch_size=1, max_partitions=1)
    await sink.wait_for(3)
    await wait_until(lambda: runner.metrics()["messagesTotal"] == len(evs), "the lateness runner to consume its input")
    await sink.settle(3, quiet=0.5)
    m = await stop(runner, log)
    assert m["lateEventsTotal"] == 1, f"exactly one event was to be dropped as late: {m!r}"
    assert m["cyclesTotal"] == len(evs), f"one message a cycle: {m!r}"
    got = [(d["ws"] - T0, d["sum"], d["count"]) for _, d in sink.items]
    assert got[0] == (0, 11, 3), f"W0 first, with the admitted late event (1+2+8): {got}"
    assert sorted(got[1:]) == [(10 * s, 20, 2), (20 * s, 32, 1)], f"W1 without the dropped event (4+16), W2: {got}"
    pid = (await api.partitions(m["serverQueryId"]))["l"]
    st = await api.state(m["serverQueryId"], pid)
    want_state = {
        tumbling_key(10, T0 + 40 * s, pid): {"acc": {"sum": 256, "count": 1}, "windowStart": T0 + 40 * s,
                                             "windowEnd": T0 + 50 * s},
        WM_KEY: {"eventTimeMs": T0 + 35 * s},
    }
    assert st == want_state, f"lateness state {st!r}, expected {want_state!r}"
    step("3 lateness: the event within allowed lateness counted (W0 = 11), the one beyond it dropped "
         "(W1 = 20), watermark stored")


# -- 4: kill and restart


WORKER_WINDOW_S = 5


def worker_stream(client: Queen, src: str, sink_q: str, delay_s: float) -> Stream:
    async def slow(m, ctx=None):
        if delay_s:
            await asyncio.sleep(delay_s)
        return m["data"]

    return (
        Stream.from_(client.queue(src))
        .map(slow)
        .window_tumbling(seconds=WORKER_WINDOW_S, event_time=lambda m: m["data"]["t"])
        .aggregate({"sum": lambda d: d["v"], "count": lambda d: 1})
        .map(lambda acc, ctx: {"ws": ctx["windowStart"], "we": ctx["windowEnd"], "p": ctx["partition"],
                               "sum": acc["sum"], "count": acc["count"]})
        .to(client.queue(sink_q))
    )


async def worker_main(url: str, query_id: str, src: str, sink_q: str, delay_ms: int, batch: int) -> None:
    client = Queen(url, timeout_millis=10000, bearer_token=TOKEN)
    log = Log(f"worker {os.getpid()}")
    runner = await run_stream(worker_stream(client, src, sink_q, delay_ms / 1000.0), query_id, url, log,
                              batch_size=batch, max_partitions=2)
    while True:
        m = runner.metrics()
        print(json.dumps({"messages": m["messagesTotal"], "cycles": m["cyclesTotal"], "errors": m["errorsTotal"],
                          "lastError": m["lastError"], "registered": log.infos[0][1] if log.infos else None}),
              flush=True)
        await asyncio.sleep(0.05)


class Worker:
    """A `worker` child process running the stream until killed; its last progress line."""

    def __init__(self, proc):
        self.proc = proc
        self.last = None
        self.task = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, url, query_id, src, sink_q, delay_ms, batch):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, os.path.abspath(__file__), "worker", url, query_id, src, sink_q,
            str(delay_ms), str(batch),
            stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL,
        )
        return cls(proc)

    async def _read(self):
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                return
            try:
                self.last = json.loads(line)
            except ValueError:
                pass

    def messages(self) -> int:
        assert self.proc.returncode is None, f"worker exited early ({self.proc.returncode}): {self.last!r}"
        if self.last:
            assert self.last["errors"] == 0, f"worker reported an error: {self.last!r}"
        return self.last["messages"] if self.last else -1

    async def kill(self) -> dict:
        self.proc.send_signal(signal.SIGKILL)
        rc = await asyncio.wait_for(self.proc.wait(), 10)
        assert rc == -signal.SIGKILL, f"worker exit {rc}"
        await self.task
        return self.last


async def scenario_restart(client: Queen, url: str, api: Api) -> None:
    """4. A worker process SIGKILLed between cycles, another mid-stream; the query resumed in a new
    process each time: every window exactly once, with exact sums."""
    src, sink_q, qid = name("kill-src"), name("kill-sink"), name("kill")
    # A short lease: what a killed worker held is redelivered soon.
    await create_queue(client, src, {"lease_time": 2, "retry_limit": 100})
    await create_queue(client, sink_q, {"lease_time": 30})
    parts = ["k0", "k1", "k2"]
    events = {}
    for pi, p in enumerate(parts):
        evs = [{"t": T0 + i * 1000 + 10 * pi, "v": 3 * i + 1000 * pi + 1} for i in range(40)]
        evs.append({"t": T0 + 100_000 + 10 * pi, "v": 7})  # closes W0..W7, stays open
        events[p] = evs
    first = 17  # W0..W2 close; W3 holds 2 events in state when the worker dies
    for p in parts:
        await push_events(client, src, p, events[p][:first])
    sink = Sink(client, sink_q)

    w1 = await Worker.start(url, qid, src, sink_q, 0, 4)
    await wait_until(lambda: w1.messages() == first * len(parts), "worker 1 to consume the first part", 30)
    await sink.wait_for(3 * len(parts))
    last1 = await w1.kill()
    assert last1["registered"]["fresh"] is True, f"worker 1 registered a new query: {last1!r}"
    step(f"4 restart: worker 1 killed between cycles after {last1['messages']} messages")

    for p in parts:
        await push_events(client, src, p, events[p][first:])
    rest = sum(len(events[p]) - first for p in parts)
    w2 = await Worker.start(url, qid, src, sink_q, 25, 4)
    await wait_until(lambda: w2.messages() >= 24, "worker 2 to make progress", 30)
    last2 = await w2.kill()
    assert last2["registered"]["fresh"] is False, f"worker 2 resumed the query: {last2!r}"
    assert last2["messages"] < rest, f"worker 2 was to be killed mid-stream: {last2!r}"
    step(f"4 restart: worker 2 killed mid-stream after {last2['messages']} of {rest} messages")

    want = expected_windows(events, 5000, {p: T0 + 100_000 for p in parts})
    assert len(want) == 8 * len(parts)
    w3 = await Worker.start(url, qid, src, sink_q, 0, 4)
    try:
        await sink.wait_for(len(want), timeout=30)
        await sink.settle(len(want), quiet=2.5)  # past the lease a dead worker might still hold
        last3 = w3.last
        assert w3.messages() > 0 and last3["registered"]["fresh"] is False, f"worker 3: {last3!r}"
    finally:
        if w3.proc.returncode is None:
            await w3.kill()
    compare(emitted_windows(sink, 5000), want, "windows across two kills")

    pids = await api.partitions(last3["registered"]["server_id"])
    for pi, p in enumerate(parts):
        st = await api.state(last3["registered"]["server_id"], pids[p])
        want_state = {
            tumbling_key(WORKER_WINDOW_S, T0 + 100_000, pids[p]): {
                "acc": {"sum": 7, "count": 1}, "windowStart": T0 + 100_000, "windowEnd": T0 + 105_000},
            WM_KEY: {"eventTimeMs": T0 + 100_000 + 10 * pi},
        }
        assert st == want_state, f"{p}: state {st!r}, expected {want_state!r}"
    step(f"4 restart: worker 3 finished; {len(want)} windows, none lost, none twice, sums exact")


async def scenario_reset(client: Queen, url: str, api: Api) -> None:
    """5. A changed pipeline under the same query id: 409 / StreamsConfigHashMismatch, state intact;
    with reset=True: accepted, state wiped."""
    src, sink_q, qid = name("reset-src"), name("reset-sink"), name("reset")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})
    a = windowed_sum(10, client.queue(sink_q), client.queue(src))
    # Same window (same state keys), another idle-flush interval: another config hash.
    b = windowed_sum(10, client.queue(sink_q), client.queue(src), idle_flush_ms=4000)
    hash_a, hash_b = a._compile().config_hash, b._compile().config_hash
    assert hash_a != hash_b

    await push_events(client, src, "r", [{"t": T0 + 1000, "v": 1}, {"t": T0 + 2000, "v": 2}])
    log = Log("reset-a")
    runner = await run_stream(a, qid, url, log, batch_size=10, max_partitions=1)
    await wait_until(lambda: runner.metrics()["messagesTotal"] == 2, "stream A to consume its input")
    m = await stop(runner, log)
    server_qid = m["serverQueryId"]
    pid = (await api.partitions(server_qid))["r"]
    window_key = tumbling_key(10, T0, pid)
    before = await api.state(server_qid, pid)
    assert before == {window_key: {"acc": {"sum": 3, "count": 2}, "windowStart": T0, "windowEnd": T0 + 10_000},
                      WM_KEY: {"eventTimeMs": T0 + 2000}}, f"state after A: {before!r}"

    # The same configuration again: the stored query, nothing reset.
    same = await api.post("/streams/v1/queries", {"name": qid, "source_queue": src, "sink_queue": sink_q,
                                                  "config_hash": hash_a})
    assert same == {"success": True, "query_id": server_qid, "name": qid, "config_hash": hash_a,
                    "fresh": False, "reset": False}, f"re-registration with the same hash: {same!r}"
    # Another configuration: refused, through the SDK and on the wire.
    log = Log("reset-b-refused")
    try:
        r = await run_stream(b, qid, url, log)
        await r.stop()
        raise AssertionError("a changed config_hash was accepted without reset")
    except StreamsConfigHashMismatch as e:
        assert "config_hash mismatch" in str(e), f"mismatch error: {e}"
    conflict = await api.post("/streams/v1/queries", {"name": qid, "source_queue": src, "sink_queue": sink_q,
                                                      "config_hash": hash_b}, status=409)
    assert conflict.get("success") is False and conflict.get("query_id") == server_qid \
        and conflict.get("name") == qid and conflict.get("error", "").startswith("config_hash mismatch"), \
        f"409 body: {conflict!r}"
    assert await api.state(server_qid, pid) == before, "a refused registration changed the state"

    # With reset: accepted, same query id, state gone.
    log = Log("reset-b")
    runner = await run_stream(b, qid, url, log, batch_size=10, max_partitions=1, reset=True)
    reg = log.registered()
    assert reg["server_id"] == server_qid and reg["fresh"] is False and reg["didReset"] is True, f"reset: {reg!r}"
    assert await api.state(server_qid, pid) == {}, "reset=True left state behind"
    sink = Sink(client, sink_q)
    await push_events(client, src, "r", [{"t": T0 + 3000, "v": 100}, {"t": T0 + 50_000, "v": 0}])
    await sink.wait_for(1)
    await wait_until(lambda: runner.metrics()["messagesTotal"] == 2, "stream B to consume its input")
    await sink.settle(1, quiet=0.5)
    await stop(runner, log)
    # The same pipeline restarted with reset=True still set (the SDK sends it on every start):
    # its hash is the stored one, so nothing is wiped.
    kept = await api.state(server_qid, pid)
    assert kept, "B's state after its run"
    log = Log("reset-b-restart")
    runner = await run_stream(b, qid, url, log, batch_size=10, max_partitions=1, reset=True)
    reg = log.registered()
    assert reg["fresh"] is False and reg["didReset"] is False, f"unchanged restart: {reg!r}"
    await stop(runner, log)
    assert await api.state(server_qid, pid) == kept, "an unchanged restart with reset=True lost its state"
    d = sink.items[0][1]
    # Had A's window survived, B would have folded 100 into it: sum 103, count 3.
    assert (d["ws"], d["sum"], d["count"]) == (T0, 100, 1), f"window after reset: {d!r}"
    listed = await api.get("/streams/v1/queries")
    mine = [q for q in listed["queries"] if q["name"] == qid]
    assert len(mine) == 1 and mine[0]["config_hash"] == hash_b and mine[0]["query_id"] == server_qid, \
        f"listed query after reset: {mine!r}"
    step("5 reset: changed config refused (409, StreamsConfigHashMismatch, state kept); "
         "reset=True accepted and state wiped (window sum 100, not 103); "
         "an unchanged restart with reset=True keeps its state")


async def scenario_two_streams(client: Queen, url: str, api: Api) -> None:
    """6. Two queries on one source queue: two consumer groups, each sees every message."""
    src = name("two-src")
    sink_a, sink_b = name("two-sink-a"), name("two-sink-b")
    qid_a, qid_b = name("two-a"), name("two-b")
    for q in (src, sink_a, sink_b):
        await create_queue(client, q, {"lease_time": 30})
    events = {}
    for pi, p in enumerate(["x", "y"]):
        events[p] = [{"id": f"{p}{i}", "t": T0 + i * 1000, "v": i + 10 * pi} for i in range(15)]
        events[p].append({"id": f"{p}-end", "t": T0 + 60_000, "v": 0})
        await push_events(client, src, p, events[p])
    n = sum(len(e) for e in events.values())

    pass_through = (
        Stream.from_(client.queue(src))
        .map(lambda m: {"id": m["data"]["id"], "by": "A"})
        .to(client.queue(sink_a))
    )
    log_a, log_b = Log("two-a"), Log("two-b")
    ra = await run_stream(pass_through, qid_a, url, log_a, batch_size=4)
    rb = await run_stream(windowed_sum(5, client.queue(sink_b), client.queue(src)), qid_b, url, log_b,
                          batch_size=5)
    want_b = expected_windows(events, 5000, {p: T0 + 60_000 for p in events})
    sa, sb = Sink(client, sink_a), Sink(client, sink_b)
    await sa.wait_for(n)
    await sb.wait_for(len(want_b))
    await wait_until(lambda: ra.metrics()["messagesTotal"] == n and rb.metrics()["messagesTotal"] == n,
                     "both runners to consume every message")
    await sa.settle(n, quiet=0.5)
    await sb.settle(len(want_b), quiet=0)
    ma, mb = await stop(ra, log_a), await stop(rb, log_b)
    ids = sorted(d["id"] for _, d in sa.items)
    assert ids == sorted(e["id"] for evs in events.values() for e in evs), f"stream A saw: {ids}"
    assert all(d["by"] == "A" for _, d in sa.items)
    for p in events:
        seen = [d["id"] for part, d in sa.items if part == p]
        assert seen == [e["id"] for e in events[p]], f"stream A, partition {p}: order {seen}"
    compare(emitted_windows(sb, 5000), want_b, "stream B's windows")
    assert ma["serverQueryId"] != mb["serverQueryId"]
    listed = {q["name"]: q for q in (await api.get("/streams/v1/queries"))["queries"]}
    for qid, sink_q, m in ((qid_a, sink_a, ma), (qid_b, sink_b, mb)):
        q = listed.get(qid)
        assert q and q["query_id"] == m["serverQueryId"] and q["source_queue"] == src and q["sink_queue"] == sink_q, \
            f"listed {qid}: {q!r}"
    step(f"6 two streams: A passed all {n} messages through once each, B summed {len(want_b)} windows exactly")


async def scenario_processing_time(client: Queen, url: str, api: Api) -> None:
    """7. Processing time (the broker's createdAt), 1 s tumbling windows closed by the idle flush
    (state/get's ripe_at_or_before) once the wall clock passes their end and grace: each window's
    sum is that of the messages created in it."""
    src, sink_q, qid = name("ptumb-src"), name("ptumb-sink"), name("ptumb")
    await create_queue(client, src, {"lease_time": 30})
    await create_queue(client, sink_q, {"lease_time": 30})
    stream = (
        Stream.from_(client.queue(src))
        .window_tumbling(seconds=1, grace_period=0.4, idle_flush_ms=100)
        .aggregate({"sum": lambda d: d["v"], "count": lambda d: 1})
        .map(lambda acc, ctx: {"ws": ctx["windowStart"], "we": ctx["windowEnd"], "p": ctx["partition"],
                               "sum": acc["sum"], "count": acc["count"]})
        .to(client.queue(sink_q))
    )
    log = Log("processing-time")
    runner = await run_stream(stream, qid, url, log, batch_size=50, max_partitions=2)
    parts = ["a", "b"]
    v = 0
    for _ in range(4):
        # Push away from second boundaries (and give each window 0.4 s of grace): a message
        # created just before one could otherwise reach its window after the flush closed it,
        # which the SDK would emit as a second window of the same start.
        await wait_until(lambda: 0.1 <= time.time() % 1 <= 0.4, "a quiet moment in the second", 2, every=0.01)
        for p in parts:
            await push_events(client, src, p, [{"v": v + 1}, {"v": v + 2}, {"v": v + 4}])
            v += 10
        await asyncio.sleep(0.4)
    total = 4 * 3 * len(parts)

    # What each message's window is, from its createdAt, read by another consumer group.
    want = {}
    for p in parts:
        msgs = await client.queue(src).partition(p).group("reader").batch(100).wait(False).pop()
        assert len(msgs) == 12, f"reader group on {p}: {len(msgs)} messages"
        for m in msgs:
            ws = _parse_iso_ms(m["createdAt"]) // 1000 * 1000
            s_, c = want.get((p, ws), (0, 0))
            want[(p, ws)] = (s_ + m["data"]["v"], c + 1)
    assert len(want) >= 4, f"the pushes were to span several windows: {want!r}"
    sink = Sink(client, sink_q)
    await sink.wait_for(len(want), timeout=15)
    await wait_until(lambda: runner.metrics()["messagesTotal"] == total, "the runner to consume its input")
    await sink.settle(len(want), quiet=1.2)
    m = await stop(runner, log)
    assert m["flushCyclesTotal"] >= 1, f"windows were to close by the idle flush: {m!r}"
    compare(emitted_windows(sink, 1000), want, "processing-time windows")
    pids = await api.partitions(m["serverQueryId"])
    for p in parts:
        st = await api.state(m["serverQueryId"], pids[p])
        assert st == {}, f"{p}: every window was flushed, yet state holds {st!r}"
    step(f"7 processing time: {len(want)} one-second windows closed by the idle flush, sums exact")


async def scenario_gate(client: Queen, url: str, api: Api) -> None:
    """8. A token-bucket gate on two partitions popped together: denied tails are acked partially
    with the lease kept (release_lease false) and redeliver in order once it expires; each
    message passes exactly once."""
    src, sink_q, qid = name("gate-src"), name("gate-sink"), name("gate")
    await create_queue(client, src, {"lease_time": 1, "retry_limit": 100})
    await create_queue(client, sink_q, {"lease_time": 30})
    n = 10
    parts = ["g0", "g1"]
    for p in parts:
        await push_events(client, src, p, [{"p": p, "n": i} for i in range(n)])
    stream = (
        Stream.from_(client.queue(src))
        .gate(token_bucket_gate(capacity=3, refill_per_sec=3))
        .to(client.queue(sink_q))
    )
    log = Log("gate")
    cycles = []
    runner = await run_stream(stream, qid, url, log, record=cycles, batch_size=2 * n, max_partitions=2)
    sink = Sink(client, sink_q)
    await sink.wait_for(n * len(parts), timeout=20)
    await sink.settle(n * len(parts), quiet=1.5)
    m = await stop(runner, log)
    for p in parts:
        got = [d["n"] for part, d in sink.items if part == p]
        assert got == list(range(n)), f"gate output on {p}: {got}, expected each message once, in order"
    assert m.get("gateAllowsTotal") == n * len(parts) and m.get("gateDenialsTotal", 0) > 0, f"gate metrics: {m!r}"
    partial = [b for b, _ in cycles if b["release_lease"] is False]
    assert partial, f"no partial-ack cycle was sent: {[b['ack'] for b, _ in cycles]!r}"
    pids = await api.partitions(m["serverQueryId"])
    for p in parts:
        pid = pids[p]
        st = await api.state(m["serverQueryId"], pid)
        assert list(st) == [pid] and st[pid]["allowedTotal"] == n and st[pid]["consumedTotal"] == n, \
            f"gate state of {p}: {st!r}"
    step(f"8 gate: {n * len(parts)} messages on 2 partitions passed once each, in order, "
         f"through {len(partial)} partial acks")


SCENARIOS = [
    ("1 tumbling", scenario_tumbling),
    ("2 session", scenario_session),
    ("3 lateness", scenario_lateness),
    ("4 restart", scenario_restart),
    ("5 reset", scenario_reset),
    ("6 two streams", scenario_two_streams),
    ("7 processing time", scenario_processing_time),
    ("8 gate", scenario_gate),
]


async def run(url: str) -> None:
    client = Queen(url, timeout_millis=10000, bearer_token=TOKEN)
    api = Api(url)
    try:
        for label, fn in SCENARIOS:
            started = time.monotonic()
            try:
                await asyncio.wait_for(fn(client, url, api), SCENARIO_TIMEOUT_S)
            except asyncio.TimeoutError:
                raise AssertionError(f"scenario {label!r} timed out after {SCENARIO_TIMEOUT_S}s") from None
            step(f"   ({label}: {time.monotonic() - started:.1f}s)")
    finally:
        await asyncio.wait_for(api.close(), 10)
        await asyncio.wait_for(client.close(), 10)


def main() -> int:
    if len(sys.argv) == 8 and sys.argv[1] == "worker":
        _, _, url, qid, src, sink_q, delay_ms, batch = sys.argv
        asyncio.run(worker_main(url, qid, src, sink_q, int(delay_ms), int(batch)))
        return 0
    if len(sys.argv) != 2:
        print("usage: [QUEEN_TOKEN=...] streams_flow.py <broker-url>", file=sys.stderr)
        return 2
    url = sys.argv[1]
    step(f"broker {url}, run id {RUN}")
    try:
        asyncio.run(asyncio.wait_for(run(url), TOTAL_TIMEOUT_S))
    except AssertionError as e:
        traceback.print_exc()
        print(f"[streams_flow] FAIL: {e}", file=sys.stderr, flush=True)
        return 1
    except BaseException as e:  # noqa: BLE001 - any other failure is a failure too
        traceback.print_exc()
        print(f"[streams_flow] ERROR: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    step("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
