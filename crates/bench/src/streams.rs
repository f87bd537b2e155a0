//! The streams scenarios: a tumbling-window sum per source partition, run as Queen's
//! streaming SDK runs it (`queen.streams`: pop for the group `streams.<queue>`, then per
//! popped partition read its state, fold the messages into the open window, and commit ONE
//! `/streams/v1/cycle` with the state, the closed windows' sums for the sink and the ack),
//! and, to price a cycle, the same steps through `/api/v1/transaction`: the same pop, the
//! same ack and the same sink pushes, with the windows kept in memory instead of state.
//!
//! Two ledgers check the run: each source message is in exactly one committed step (the
//! message ledger), and each (partition, window) the producers pushed into reaches the sink
//! exactly once with the sum pushed (the window ledger). Every source partition has one
//! producer, which waits for each push's answer, so event times rise along each partition's
//! log and no message is late for its window.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::stats::{histogram, percentiles, record, Percentiles};
use super::windows::{fold, start_of, state_key, tag, Acc, Open, Step, WindowCheck, Windows};
use super::workers::{pad, unix_micros, Ctx, Pace, Pad};
use super::{BenchArgs, Scenario, Shared};

/// What every task of a streams run shares.
pub(crate) struct Pipeline {
    /// The registered query (`streams` only; `streams-tx` keeps no state).
    query_id: Option<String>,
    sink: String,
    group: String,
    tag: String,
    width: i64,
    windows: Windows,
    /// Source partitions seen, id → name, for the final flush.
    partitions: Mutex<HashMap<String, String>>,
    /// `streams-tx`: each partition's open windows, locked from a step's fold to its commit
    /// (the next pop of the partition may reach another consumer as soon as it commits).
    memory: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Open>>>>,
    /// The latest event time pushed, ms.
    last_event: AtomicI64,
    counts: Counts,
    window_latency: Mutex<Histogram<u64>>,
    step_latency: Mutex<Histogram<u64>>,
}

#[derive(Default)]
struct Counts {
    steps: AtomicU64,
    steps_in_window: AtomicU64,
    state_reads: AtomicU64,
    windows_in_window: AtomicU64,
    /// Sink items in committed steps and flushes: what the sink must hold.
    sink_items: AtomicU64,
    flushed: AtomicU64,
}

/// A streams run's own figures.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StreamsFigures {
    /// Steps committed in the measured window (`/streams/v1/cycle` calls for `streams`,
    /// `/api/v1/transaction` calls for `streams-tx`), and per second.
    pub cycles: u64,
    pub cycle_rate: f64,
    /// Every step committed, the drain's too: what commits per cycle divide by.
    pub cycles_total: u64,
    pub messages_per_cycle: f64,
    /// `/streams/v1/state/get` calls (one per cycle; none for `streams-tx`).
    pub state_reads: u64,
    /// Windows the steps of the measured window emitted to the sink, and per second.
    pub windows: u64,
    pub window_rate: f64,
    /// Windows still open when the producers stopped, emitted by the final flush.
    pub flushed: u64,
    /// PostgreSQL commits of the whole run (pushes and pops included) per step.
    pub commits_per_cycle: Option<f64>,
    /// From a window's end (wall clock) to the answer of the step that emitted it.
    pub window_latency: Percentiles,
    /// A step's requests: the state read and the cycle, or the transaction.
    pub step_latency: Percentiles,
}

#[derive(Deserialize)]
struct Popped {
    #[serde(default)]
    messages: Vec<Source>,
    #[serde(rename = "leaseId", default)]
    lease_id: Option<String>,
}

#[derive(Deserialize)]
struct Source {
    #[serde(rename = "transactionId")]
    txid: String,
    #[serde(rename = "partitionId")]
    partition_id: String,
    partition: String,
    data: Event,
}

/// A source message's payload: event time (epoch ms) and value.
#[derive(Deserialize)]
struct Event {
    t: i64,
    v: i64,
}

/// The messages of one partition in one pop, in log order.
struct Group {
    partition_id: String,
    partition: String,
    messages: Vec<Source>,
}

#[derive(Deserialize)]
struct Success {
    #[serde(default)]
    success: bool,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct StateRows {
    #[serde(default)]
    rows: Vec<StateRow>,
}

#[derive(Deserialize)]
struct StateRow {
    key: String,
    value: WindowValue,
}

/// A window's state value, as the SDK's reducer writes it.
#[derive(Deserialize)]
struct WindowValue {
    acc: i64,
    #[serde(rename = "windowStart")]
    window_start: i64,
}

#[derive(Deserialize)]
struct SinkResult {
    partition: String,
    #[serde(rename = "windowStart")]
    window_start: i64,
    sum: i64,
}

#[derive(Deserialize)]
struct SinkPop {
    #[serde(default)]
    messages: Vec<SinkMessage>,
}

#[derive(Deserialize)]
struct SinkMessage {
    data: SinkResult,
}

impl Pipeline {
    /// Registers the query (`streams`), as the SDK's `run()` does first.
    pub(crate) async fn start(
        http: &reqwest::Client,
        args: &BenchArgs,
        queue: &str,
    ) -> anyhow::Result<Pipeline> {
        let width = args.window_ms.max(1) as i64;
        let sink = format!("{queue}-sink");
        let query_id = if args.scenario == Scenario::Streams {
            let body = json!({"name": format!("{queue}.sum"), "source_queue": queue,
                              "sink_queue": sink, "config_hash": format!("bench-sum-{width}")});
            let r = http
                .post(format!("{}/streams/v1/queries", args.pop_url()))
                .json(&body)
                .send()
                .await?;
            anyhow::ensure!(r.status() == 200, "registering the query: {}", r.status());
            let v: Value = r.json().await?;
            let id = v["query_id"].as_str().map(str::to_string);
            Some(id.ok_or_else(|| anyhow::anyhow!("registration answered {v}"))?)
        } else {
            None
        };
        Ok(Pipeline {
            query_id,
            sink,
            group: format!("streams.{queue}"),
            tag: tag(width),
            width,
            windows: Windows::default(),
            partitions: Mutex::default(),
            memory: Mutex::default(),
            last_event: AtomicI64::new(0),
            counts: Counts::default(),
            window_latency: Mutex::new(histogram()),
            step_latency: Mutex::new(histogram()),
        })
    }
}

fn pipeline(ctx: &Ctx) -> &Pipeline {
    ctx.streams.as_ref().expect("a streams run has a pipeline")
}

fn failed(shared: &Shared, what: String) {
    shared.errors.fetch_add(1, Relaxed);
    shared.first_error.lock().unwrap().get_or_insert(what);
}

/// POSTs `body` to `path` of the consumers' broker and reads the answer.
async fn post<T: DeserializeOwned>(ctx: &Ctx, path: &str, body: &Value) -> Result<T, String> {
    let url = format!("{}{path}", ctx.args.pop_url());
    let r = ctx
        .http
        .post(&url)
        .json(body)
        .send()
        .await
        .map_err(|e| format!("{path}: {e}"))?;
    let status = r.status();
    let bytes = r.bytes().await.map_err(|e| format!("{path}: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "{path}: HTTP {status} {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{path}: {e}"))
}

// ------------------------------------------------------------------------------ producers

/// The source partitions producer `p` owns: one producer per partition, so each partition's
/// event times rise along its log.
fn owned(p: usize, producers: usize, partitions: usize) -> Vec<usize> {
    (0..partitions).filter(|i| i % producers == p).collect()
}

/// One push of `n` messages to partition `part`, event time `t` (ms); returns the body and
/// the sum of its values.
fn source_body(
    ctx: &Ctx,
    pad: &Pad,
    at: (usize, u64),
    n: usize,
    part: usize,
    t: i64,
) -> (String, i64) {
    let (p, seq) = at;
    let mut items = Vec::with_capacity(n);
    let mut sum = 0;
    for i in 0..n as u64 {
        // Values that differ from message to message, so a message counted twice and
        // another lost do not cancel out in a sum.
        let v = ((seq + i) * 2_654_435_761 % 997 + 1) as i64;
        sum += v;
        items.push(json!({
            "queue": ctx.queue, "partition": format!("p{part}"),
            "transactionId": super::ledger::txid(p, seq + i),
            "payload": {"t": t, "v": v, "pad": pad.for_message(p, seq + i)},
        }));
    }
    (json!({ "items": items }).to_string(), sum)
}

/// Pushes to its partitions until told to stop, waiting while the backlog is over
/// `--max-backlog`; returns the push latency histogram (µs).
pub(crate) async fn producer(ctx: Arc<Ctx>, p: usize) -> anyhow::Result<Histogram<u64>> {
    let mut h = histogram();
    let producers = ctx.args.producers.min(ctx.args.partitions).max(1);
    let mine = owned(p, producers, ctx.args.partitions);
    if mine.is_empty() {
        return Ok(h);
    }
    let url = format!("{}/api/v1/push", ctx.args.url);
    let batch = ctx.args.push_batch.max(1);
    let pad = pad(&ctx.args);
    let mut pace = Pace::new(&ctx.args, producers, batch);
    let mut seq = 0u64;
    while !ctx.shared.stop_producers.load(Relaxed) {
        let scheduled = match pace.due().await {
            Some(at) => at,
            None => {
                backpressure(&ctx).await;
                Instant::now()
            }
        };
        if ctx.shared.stop_producers.load(Relaxed) {
            break;
        }
        let t = (pace.unix(scheduled) / 1000) as i64;
        let part = mine[(seq / batch as u64) as usize % mine.len()];
        let (body, sum) = source_body(&ctx, &pad, (p, seq), batch, part, t);
        if !push_until_stored(&ctx, &url, body).await {
            break;
        }
        book(&ctx, (p, seq, batch as u64), (part, t, sum));
        seq += batch as u64;
        record(&mut h, scheduled.elapsed().as_micros() as u64);
    }
    Ok(h)
}

/// `--producers 0`: a backlog of `--prefill` messages pushed before the measured window, so
/// the consumers are measured alone, as pop-ack does. Eight pushers (ids after the
/// producers', so no transaction id repeats), each owning its partitions.
pub(crate) async fn prefill(ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let pushers = ctx.args.partitions.clamp(1, 8);
    let per = ctx.args.prefill / pushers as u64;
    let tasks: Vec<_> = (0..pushers)
        .map(|i| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let mine = owned(i, pushers, ctx.args.partitions);
                let (p, url, pad) = (
                    ctx.args.producers + i,
                    format!("{}/api/v1/push", ctx.args.url),
                    pad(&ctx.args),
                );
                let mut seq = 0u64;
                while seq < per {
                    let n = (per - seq).min(ctx.args.push_batch.max(1) as u64);
                    let part =
                        mine[(seq / ctx.args.push_batch.max(1) as u64) as usize % mine.len()];
                    let t = (unix_micros() / 1000) as i64;
                    let (body, sum) = source_body(&ctx, &pad, (p, seq), n as usize, part, t);
                    anyhow::ensure!(push_until_stored(&ctx, &url, body).await, "prefill stopped");
                    book(&ctx, (p, seq, n), (part, t, sum));
                    seq += n;
                }
                Ok::<_, anyhow::Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Sends a push until it is stored; false when told to stop first. A failed push is sent
/// again as it was: had it been stored after all, another event time under the same ids
/// would be deduplicated, and its window booked wrongly.
async fn push_until_stored(ctx: &Ctx, url: &str, body: String) -> bool {
    while !push(ctx, url, body.clone()).await {
        if ctx.shared.stop_producers.load(Relaxed) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Books a stored push: pusher `p`'s `n` messages from `seq`, to partition `part` at event
/// time `t`, their values summing to `sum`.
fn book(ctx: &Ctx, (p, seq, n): (usize, u64, u64), (part, t, sum): (usize, i64, i64)) {
    let pl = pipeline(ctx);
    pl.windows
        .pushed(&format!("p{part}"), start_of(t, pl.width), sum);
    pl.last_event.fetch_max(t, Relaxed);
    ctx.ledgers[0].pushed(p, seq + n);
    ctx.shared.pushed.fetch_add(n, Relaxed);
}

/// Closed loop: waits while more than `--max-backlog` pushed messages wait for a step, so
/// the consumers always have full batches and the backlog does not grow through the run.
async fn backpressure(ctx: &Ctx) {
    let max = ctx.args.max_backlog;
    while max > 0 && !ctx.shared.stop_producers.load(Relaxed) {
        // A step may commit a push before its producer has read the push's answer.
        let waiting = ctx
            .shared
            .pushed
            .load(Relaxed)
            .saturating_sub(ctx.shared.delivered.load(Relaxed));
        if waiting <= max {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn push(ctx: &Ctx, url: &str, body: String) -> bool {
    let res = ctx
        .http
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    ctx.shared.push_requests.fetch_add(1, Relaxed);
    match res {
        Ok(r) if r.status() == 201 => r.bytes().await.is_ok(),
        Ok(r) => {
            let what = format!(
                "push: HTTP {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
            failed(&ctx.shared, what);
            false
        }
        Err(e) => {
            failed(&ctx.shared, format!("push: {e}"));
            false
        }
    }
}

// ------------------------------------------------------------------------------ consumers

/// Pops for the streams group and commits one step per popped partition, until told to
/// stop; returns the end-to-end latency histogram (µs: from a message's event time to the
/// answer of the step that committed it).
pub(crate) async fn consumer(ctx: Arc<Ctx>) -> anyhow::Result<Histogram<u64>> {
    let pl = pipeline(&ctx);
    let mut e2e = histogram();
    let (mut windows, mut steps) = (histogram(), histogram());
    let pop_url = format!(
        "{}/api/v1/pop/queue/{}?batch={}&partitions={}&wait=true&timeout=1000&consumerGroup={}",
        ctx.args.pop_url(),
        ctx.queue,
        ctx.args.pop_batch.max(1),
        ctx.args.pop_partitions.max(1),
        pl.group
    );
    while !ctx.shared.stop_consumers.load(Relaxed) {
        let Some(pop) = pop(&ctx, &pop_url).await else {
            continue;
        };
        let lease = pop.lease_id.unwrap_or_default();
        // One step per partition, one after another, as the SDK's loop does.
        for g in by_partition(pop.messages) {
            let began = Instant::now();
            let done = match pl.query_id {
                Some(_) => cycle(&ctx, &g, &lease).await,
                None => transaction(&ctx, &g, &lease).await,
            };
            match done {
                Ok(step) => {
                    record(&mut steps, began.elapsed().as_micros() as u64);
                    committed(&ctx, &g, &step, &mut e2e, &mut windows);
                }
                Err(e) => failed(&ctx.shared, e),
            }
        }
    }
    pl.window_latency.lock().unwrap().add(&windows)?;
    pl.step_latency.lock().unwrap().add(&steps)?;
    Ok(e2e)
}

async fn pop(ctx: &Ctx, url: &str) -> Option<Popped> {
    let answer = match ctx.http.get(url).send().await {
        Ok(r) if r.status().is_success() => r.bytes().await.ok(),
        _ => None,
    };
    ctx.shared.pop_requests.fetch_add(1, Relaxed);
    let popped = answer.and_then(|b| serde_json::from_slice::<Popped>(&b).ok());
    if popped.is_none() {
        ctx.shared.errors.fetch_add(1, Relaxed);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    popped.filter(|p| !p.messages.is_empty())
}

fn by_partition(messages: Vec<Source>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for m in messages {
        match groups.iter_mut().find(|g| g.partition_id == m.partition_id) {
            Some(g) => g.messages.push(m),
            None => groups.push(Group {
                partition_id: m.partition_id.clone(),
                partition: m.partition.clone(),
                messages: vec![m],
            }),
        }
    }
    groups
}

fn events(g: &Group) -> impl Iterator<Item = (i64, i64)> + '_ {
    g.messages.iter().map(|m| (m.data.t, m.data.v))
}

/// A window's result, as the sink receives it: the SDK's default sink partition is the
/// source partition's name.
fn sink_item(pl: &Pipeline, partition: &str, start: i64, sum: i64) -> Value {
    json!({"queue": pl.sink, "partition": partition,
           "payload": {"partition": partition, "windowStart": start,
                       "windowEnd": start + pl.width, "sum": sum}})
}

/// `streams`: the SDK's step. Reads the partition's state (every cycle does), folds the
/// messages into its windows, and commits the state, the closed windows and the ack in one
/// cycle.
async fn cycle(ctx: &Ctx, g: &Group, lease: &str) -> Result<Step, String> {
    let pl = pipeline(ctx);
    let query = pl.query_id.as_deref().unwrap_or_default();
    let mut open = read_state(ctx, query, &g.partition_id, None).await?;
    let step = fold(&mut open, events(g), pl.width);
    let key = |s| state_key(&pl.tag, s, &g.partition_id);
    let mut ops: Vec<Value> = step
        .closed
        .iter()
        .filter(|(_, _, seeded)| *seeded)
        .map(|(s, _, _)| json!({"type": "delete", "key": key(*s)}))
        .collect();
    ops.extend(step.upserts.iter().map(|(s, sum)| {
        json!({"type": "upsert", "key": key(*s),
               "value": {"acc": sum, "windowStart": s, "windowEnd": s + pl.width}})
    }));
    let items: Vec<Value> = step
        .closed
        .iter()
        .map(|(s, sum, _)| sink_item(pl, &g.partition, *s, *sum))
        .collect();
    let last = g.messages.last().expect("a group has a message");
    let body = json!({
        "query_id": query, "partition_id": g.partition_id, "consumer_group": pl.group,
        "state_ops": ops, "push_items": items,
        "ack": {"transactionId": last.txid, "leaseId": lease, "status": "completed",
                "count": g.messages.len()},
        "release_lease": true,
    });
    let a: Success = post(ctx, "/streams/v1/cycle", &body).await?;
    a.success
        .then_some(step)
        .ok_or_else(|| format!("cycle: {}", a.error.unwrap_or_default()))
}

/// The partition's windows as its state holds them (`ripe`: only those ended by then).
async fn read_state(
    ctx: &Ctx,
    query: &str,
    partition_id: &str,
    ripe: Option<i64>,
) -> Result<Open, String> {
    let pl = pipeline(ctx);
    let mut body = json!({"query_id": query, "partition_id": partition_id, "keys": []});
    if let Some(at) = ripe {
        body["key_prefix"] = json!(format!("{}\u{1f}", pl.tag));
        body["ripe_at_or_before"] = json!(at);
    }
    let rows: StateRows = post(ctx, "/streams/v1/state/get", &body).await?;
    pl.counts.state_reads.fetch_add(1, Relaxed);
    let mine = format!("{}\u{1f}", pl.tag);
    Ok(rows
        .rows
        .into_iter()
        .filter(|r| r.key.starts_with(&mine))
        .map(|r| {
            let acc = Acc {
                sum: r.value.acc,
                seeded: true,
                touched: false,
            };
            (r.value.window_start, acc)
        })
        .collect())
}

/// `streams-tx`: the same pop, ack and sink pushes in one `/api/v1/transaction`; the windows
/// live in this process, under the partition's lock until the transaction answered.
async fn transaction(ctx: &Ctx, g: &Group, lease: &str) -> Result<Step, String> {
    let pl = pipeline(ctx);
    let cell = pl
        .memory
        .lock()
        .unwrap()
        .entry(g.partition_id.clone())
        .or_default()
        .clone();
    let mut open = cell.lock().await;
    let mut next = open.clone();
    let step = fold(&mut next, events(g), pl.width);
    let last = g.messages.last().expect("a group has a message");
    let mut ops = vec![json!({"type": "ack", "transactionId": last.txid,
        "partitionId": g.partition_id, "leaseId": lease, "status": "completed",
        "consumerGroup": pl.group})];
    if !step.closed.is_empty() {
        let items: Vec<Value> = step
            .closed
            .iter()
            .map(|(s, sum, _)| sink_item(pl, &g.partition, *s, *sum))
            .collect();
        ops.push(json!({"type": "push", "items": items}));
    }
    let body = json!({"operations": ops, "requiredLeases": [lease]});
    let a: Success = post(ctx, "/api/v1/transaction", &body).await?;
    if !a.success {
        return Err(format!("transaction: {}", a.error.unwrap_or_default()));
    }
    for acc in next.values_mut() {
        acc.touched = false;
    }
    *open = next;
    Ok(step)
}

/// Books a committed step: its messages in the ledger, its windows' latency.
fn committed(
    ctx: &Ctx,
    g: &Group,
    step: &Step,
    e2e: &mut Histogram<u64>,
    win: &mut Histogram<u64>,
) {
    let pl = pipeline(ctx);
    let now = unix_micros();
    for m in &g.messages {
        record(e2e, now.saturating_sub(m.data.t as u64 * 1000));
    }
    for (s, _, _) in &step.closed {
        record(win, now.saturating_sub((s + pl.width) as u64 * 1000));
    }
    pl.partitions
        .lock()
        .unwrap()
        .entry(g.partition_id.clone())
        .or_insert_with(|| g.partition.clone());
    ctx.ledgers[0].delivered(g.messages.iter().map(|m| m.txid.as_str()));
    let (n, emitted) = (g.messages.len() as u64, step.closed.len() as u64);
    ctx.shared.delivered.fetch_add(n, Relaxed);
    pl.counts.steps.fetch_add(1, Relaxed);
    pl.counts.sink_items.fetch_add(emitted, Relaxed);
    if !ctx.shared.window_closed.load(Relaxed) {
        ctx.shared.delivered_in_window.fetch_add(n, Relaxed);
        pl.counts.steps_in_window.fetch_add(1, Relaxed);
        pl.counts.windows_in_window.fetch_add(emitted, Relaxed);
    }
}

// ------------------------------------------------------------------------------ the end

/// After the consumers stopped: emits the windows still open, reads the sink back and checks
/// it against what was pushed. `commits`: the run's PostgreSQL commits, when known.
pub(crate) async fn finish(
    ctx: &Ctx,
    seconds: f64,
    commits: Option<u64>,
) -> anyhow::Result<(StreamsFigures, WindowCheck)> {
    let pl = pipeline(ctx);
    flush(ctx).await?;
    let sink = read_sink(ctx, pl.counts.sink_items.load(Relaxed)).await?;
    let c = &pl.counts;
    let (steps, total) = (c.steps_in_window.load(Relaxed), c.steps.load(Relaxed));
    let windows = c.windows_in_window.load(Relaxed);
    let secs = seconds.max(1e-9);
    let figures = StreamsFigures {
        cycles: steps,
        cycle_rate: steps as f64 / secs,
        cycles_total: total,
        messages_per_cycle: ctx.shared.delivered.load(Relaxed) as f64 / total.max(1) as f64,
        state_reads: c.state_reads.load(Relaxed),
        windows,
        window_rate: windows as f64 / secs,
        flushed: c.flushed.load(Relaxed),
        commits_per_cycle: commits.map(|n| n as f64 / total.max(1) as f64),
        window_latency: percentiles(&pl.window_latency.lock().unwrap()),
        step_latency: percentiles(&pl.step_latency.lock().unwrap()),
    };
    Ok((figures, pl.windows.check(&sink)))
}

/// The SDK's idle flush, once for every partition: the windows that ended, read from state
/// and emitted by a cycle without an ack (`streams`), or pushed from memory (`streams-tx`).
/// Waits for the last window pushed into to end first.
async fn flush(ctx: &Ctx) -> anyhow::Result<()> {
    let pl = pipeline(ctx);
    let ends =
        pl.last_event.load(Relaxed) - pl.last_event.load(Relaxed).rem_euclid(pl.width) + pl.width;
    let wait = ends - (unix_micros() / 1000) as i64;
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64 + 1)).await;
    }
    let partitions: Vec<(String, String)> =
        pl.partitions.lock().unwrap().clone().into_iter().collect();
    for (id, name) in partitions {
        let n = match &pl.query_id {
            Some(query) => flush_cycle(ctx, query, &id, &name).await,
            None => flush_memory(ctx, &id, &name).await,
        }
        .map_err(|e| anyhow::anyhow!("final flush of {name}: {e}"))?;
        pl.counts.flushed.fetch_add(n, Relaxed);
        pl.counts.sink_items.fetch_add(n, Relaxed);
    }
    Ok(())
}

async fn flush_cycle(ctx: &Ctx, query: &str, id: &str, name: &str) -> Result<u64, String> {
    let pl = pipeline(ctx);
    let now = (unix_micros() / 1000) as i64;
    let open = read_state(ctx, query, id, Some(now)).await?;
    if open.is_empty() {
        return Ok(0);
    }
    let ops: Vec<Value> = open
        .keys()
        .map(|s| json!({"type": "delete", "key": state_key(&pl.tag, *s, id)}))
        .collect();
    let items: Vec<Value> = open
        .iter()
        .map(|(s, a)| sink_item(pl, name, *s, a.sum))
        .collect();
    let body = json!({"query_id": query, "partition_id": id, "consumer_group": pl.group,
                      "state_ops": ops, "push_items": items, "ack": null, "release_lease": true});
    let a: Success = post(ctx, "/streams/v1/cycle", &body).await?;
    a.success
        .then_some(open.len() as u64)
        .ok_or_else(|| a.error.unwrap_or_default())
}

async fn flush_memory(ctx: &Ctx, id: &str, name: &str) -> Result<u64, String> {
    let pl = pipeline(ctx);
    let cell = pl.memory.lock().unwrap().get(id).cloned();
    let Some(cell) = cell else { return Ok(0) };
    let open = std::mem::take(&mut *cell.lock().await);
    if open.is_empty() {
        return Ok(0);
    }
    let items: Vec<Value> = open
        .iter()
        .map(|(s, a)| sink_item(pl, name, *s, a.sum))
        .collect();
    let url = format!("{}/api/v1/push", ctx.args.url);
    let r = ctx
        .http
        .post(&url)
        .json(&json!({ "items": items }))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    (r.status() == 201)
        .then_some(open.len() as u64)
        .ok_or_else(|| format!("push: HTTP {}", r.status()))
}

/// Every result the sink holds (queue mode, acknowledged at delivery): until `expected` came,
/// then once more, so a result stored twice is counted.
async fn read_sink(ctx: &Ctx, expected: u64) -> anyhow::Result<Vec<(String, i64, i64)>> {
    let pl = pipeline(ctx);
    let url = format!(
        "{}/api/v1/pop/queue/{}?batch=1000&partitions={}&wait=false&autoAck=true",
        ctx.args.pop_url(),
        pl.sink,
        ctx.args.partitions.clamp(1, 100)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    loop {
        let p: SinkPop = ctx.http.get(&url).send().await?.json().await?;
        let empty = p.messages.is_empty();
        out.extend(
            p.messages
                .into_iter()
                .map(|m| (m.data.partition, m.data.window_start, m.data.sum)),
        );
        let done = out.len() as u64 >= expected;
        if (done && empty) || Instant::now() > deadline {
            return Ok(out);
        }
        if empty {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
