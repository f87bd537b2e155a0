//! The timers scenario: how late Queen's timers (`POST /api/v1/timers`) reach a consumer.
//!
//! Producers schedule timers at `--rate` (1,000/s when 0) in batches of `--timer-batch`
//! operations, each due `--timer-delay-ms` after the database's `now()`, under unique keys,
//! with an empty JSON payload: the answer promises each timer's `deliverAt` and the txn its
//! message will carry, and the book keeps txn → `deliverAt`. Consumers long-poll the timer
//! queue (`autoAck`) and book, per message, the wall-clock time its pop answer arrived. At
//! the end each timer's lateness is its first arrival minus its `deliverAt`: `deliverAt` is on
//! the database's clock and the arrival on the generator's, one clock when both run on one
//! machine. The book also counts what never came (missing), what came twice (duplicates:
//! must be 0) and what came without a promise (unknown: a schedule whose answer was lost).
//!
//! `--pending N` first loads N timers due in a day into `<queue>-pending`, through the same
//! route in batches of [`PENDING_BATCH`], so the measured timers fire with N pending beside
//! them. The broker's own view, the `regent_timer_lateness_seconds` histogram (fire commit
//! minus `deliver_at`), is read before and after the run when a metrics route answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::{json, Value};

use super::ledger::txid;
use super::stats::{histogram, percentiles, record, trace_slow, Percentiles};
use super::workers::{unix_micros, Ctx, Pace};
use super::{BenchArgs, Shared};

/// The rate when `--rate` is 0: the 1,000 timers/s.
pub const DEFAULT_RATE: f64 = 1000.0;
/// Schedule operations per request of the `--pending` load.
pub const PENDING_BATCH: u64 = 1_000;
/// Concurrent requests of the `--pending` load.
const PENDING_LOADERS: u64 = 4;
/// The pending timers' delay: a day, so none fires during a run.
const PENDING_DELAY_MS: u64 = 86_400_000;
/// Base64 of `{}`: the payload carries nothing the generator needs.
const PAYLOAD: &str = "e30=";

/// The timers scenario's total rate.
pub(crate) fn rate(args: &BenchArgs) -> f64 {
    if args.rate > 0.0 {
        args.rate
    } else {
        DEFAULT_RATE
    }
}

/// What the scenario's tasks share: txn → promise and arrivals.
#[derive(Default)]
pub(crate) struct Book {
    entries: Mutex<HashMap<String, Entry>>,
    /// Timers whose schedule answered with a `deliverAt`.
    promised: AtomicU64,
    /// Promised timers delivered at least once.
    matched: AtomicU64,
    /// Schedule results that were not `ok` (or had no `deliverAt`).
    refused: AtomicU64,
    /// The `--pending` load, and what the tenant had pending when the window began.
    pending: Mutex<PendingLoad>,
    broker_before: Mutex<Option<Buckets>>,
}

#[derive(Default)]
struct Entry {
    /// The promised `deliverAt`, µs since the epoch.
    deliver_at: Option<u64>,
    /// When each delivery's pop answer arrived, µs since the epoch.
    arrivals: Vec<u64>,
}

#[derive(Clone, Copy, Default)]
struct PendingLoad {
    loaded: u64,
    seconds: f64,
    in_tenant: Option<u64>,
}

impl Book {
    /// Books a promise (its delivery may have been booked first).
    fn promised(&self, txn: &str, deliver_at: u64) {
        let mut e = self.entries.lock().unwrap();
        let entry = e.entry(txn.to_string()).or_default();
        if entry.deliver_at.is_some() {
            return;
        }
        entry.deliver_at = Some(deliver_at);
        self.promised.fetch_add(1, Relaxed);
        if !entry.arrivals.is_empty() {
            self.matched.fetch_add(1, Relaxed);
        }
    }

    /// Books deliveries whose pop answer arrived at `at`; each one's lateness when its
    /// promise is known, for `--trace-slower-than`.
    fn delivered<'a>(&self, txns: impl Iterator<Item = &'a str>, at: u64, trace: Option<u64>) {
        let mut e = self.entries.lock().unwrap();
        for t in txns {
            let entry = e.entry(t.to_string()).or_default();
            if entry.arrivals.is_empty() && entry.deliver_at.is_some() {
                self.matched.fetch_add(1, Relaxed);
            }
            entry.arrivals.push(at);
            if let Some(d) = entry.deliver_at {
                trace_slow(trace, "timer", at.saturating_sub(d), at / 1000);
            }
        }
    }

    /// Promised timers not delivered yet.
    pub(crate) fn outstanding(&self) -> u64 {
        self.promised
            .load(Relaxed)
            .saturating_sub(self.matched.load(Relaxed))
    }
}

/// The timers scenario's own figures.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TimerFigures {
    pub rate: f64,
    pub delay_ms: u64,
    pub batch: usize,
    /// `--pending`: timers loaded before the measured window, and how long the load took.
    pub pending_loaded: u64,
    pub pending_load_seconds: f64,
    pub pending_load_rate: f64,
    /// Timers pending in the tenant (every queue) when the measured window began, as
    /// `GET /api/v1/timers` counted them; `None` when it did not answer.
    pub pending_at_start: Option<u64>,
    /// Timers whose schedule answered with a promise, and per second of the window.
    pub scheduled: u64,
    pub schedule_rate: f64,
    /// Schedule results that were not `ok`.
    pub refused: u64,
    /// Promised timers delivered (once or more).
    pub delivered: u64,
    /// Promised but not delivered by the end of the drain.
    pub missing: u64,
    /// Deliveries beyond a timer's first (must be 0: exactly once).
    pub duplicates: u64,
    /// Deliveries of txns no schedule answer promised (a schedule whose answer was lost).
    pub unknown: u64,
    /// Delivered before their `deliverAt` by the generator's clock (0 on one machine).
    pub early: u64,
    /// First arrival (the pop answer, generator's clock) minus `deliverAt` (database's clock).
    pub lateness: Percentiles,
    /// Each schedule request, from its scheduled send time to its answer.
    pub schedule_latency: Percentiles,
    /// The broker's `regent_timer_lateness_seconds` over the run, when a metrics route answered.
    pub broker_lateness: Option<BrokerLateness>,
}

impl TimerFigures {
    /// Every promised timer delivered exactly once, none early, none unknown.
    pub fn ok(&self) -> bool {
        self.missing == 0 && self.duplicates == 0 && self.unknown == 0 && self.early == 0
    }
}

/// The broker's lateness histogram over the run (this broker's fires of every timer of the
/// tenant, or of every tenant: another load on the broker is counted too). Percentiles are
/// the upper bounds of the buckets they fall in (5, 10, 25, 50, 100, 250 ms, ...); `None` is
/// beyond the last bound (60 s).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BrokerLateness {
    pub fired: u64,
    pub mean_ms: f64,
    pub p50_le_ms: Option<f64>,
    pub p90_le_ms: Option<f64>,
    pub p99_le_ms: Option<f64>,
}

fn book(ctx: &Ctx) -> &Book {
    ctx.timers.as_ref().expect("a timers run has a book")
}

fn failed(shared: &Shared, what: String) {
    shared.errors.fetch_add(1, Relaxed);
    shared.first_error.lock().unwrap().get_or_insert(what);
}

/// The pending timers' queue.
fn pending_queue(queue: &str) -> String {
    format!("{queue}-pending")
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Scheduled>,
}

#[derive(Deserialize)]
struct Scheduled {
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    txn: Option<String>,
    #[serde(rename = "deliverAt", default)]
    deliver_at: Option<String>,
}

fn micros_of(iso: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(iso).ok()?;
    u64::try_from(t.timestamp_micros()).ok()
}

/// POSTs one body to `/api/v1/timers`; the results, or what went wrong.
async fn post(ctx: &Ctx, body: String) -> Result<Vec<Scheduled>, String> {
    let r = ctx
        .http
        .post(format!("{}/api/v1/timers", ctx.args.url))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("timers: {e}"))?;
    let status = r.status();
    let bytes = r.bytes().await.map_err(|e| format!("timers: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "timers: HTTP {status} {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    serde_json::from_slice::<Answer>(&bytes)
        .map(|a| a.results)
        .map_err(|e| format!("timers: {e}"))
}

fn schedule_op(queue: &str, key: &str, txn: Option<&str>, delay: u64, partition: &str) -> Value {
    let mut op = json!({"op": "schedule", "queue": queue, "timerKey": key, "payload": PAYLOAD,
                        "delayMs": delay, "partition": partition});
    if let Some(t) = txn {
        op["txn"] = json!(t);
    }
    op
}

// ------------------------------------------------------------------------------ producers

/// Schedules timers at its share of the rate until told to stop; returns the schedule
/// latency histogram (µs, from each request's scheduled send time).
pub(crate) async fn producer(ctx: Arc<Ctx>, p: usize) -> anyhow::Result<Histogram<u64>> {
    let book = book(&ctx);
    let mut h = histogram();
    let batch = ctx.args.timer_batch.max(1);
    let producers = ctx.args.producers.max(1);
    // Producers staggered over one interval, so the schedules come evenly, not in bursts.
    let offset = batch as f64 * p as f64 / rate(&ctx.args);
    tokio::time::sleep(Duration::from_secs_f64(offset)).await;
    let mut pace = Pace::at_rate(rate(&ctx.args), producers, batch);
    let partitions = ctx.args.partitions.max(1) as u64;
    let mut seq = 0u64;
    while !ctx.shared.stop_producers.load(Relaxed) {
        let scheduled = pace.due().await.unwrap_or_else(Instant::now);
        if ctx.shared.stop_producers.load(Relaxed) {
            break;
        }
        // One partition per request, rotating, as the push scenarios do.
        let request = seq / batch as u64;
        let partition = format!("p{}", (p as u64 * 7919 + request) % partitions);
        let ops: Vec<Value> = (0..batch as u64)
            .map(|i| {
                let t = txid(p, seq + i);
                schedule_op(
                    &ctx.queue,
                    &t,
                    Some(&t),
                    ctx.args.timer_delay_ms,
                    &partition,
                )
            })
            .collect();
        seq += batch as u64;
        let answer = post(&ctx, json!({ "operations": ops }).to_string()).await;
        ctx.shared.push_requests.fetch_add(1, Relaxed);
        let results = match answer {
            Ok(r) => r,
            Err(e) => {
                failed(&ctx.shared, e);
                continue;
            }
        };
        let mut booked = 0;
        for r in results {
            let at = r.deliver_at.as_deref().and_then(micros_of);
            match (r.ok, r.txn, at) {
                (true, Some(txn), Some(at)) => {
                    book.promised(&txn, at);
                    booked += 1;
                }
                _ => {
                    book.refused.fetch_add(1, Relaxed);
                    let what = format!("timers: a schedule answered {:?}", r.status);
                    failed(&ctx.shared, what);
                }
            }
        }
        ctx.shared.pushed.fetch_add(booked, Relaxed);
        let micros = scheduled.elapsed().as_micros() as u64;
        trace_slow(
            ctx.args.trace_slower_than,
            "schedule",
            micros,
            unix_micros() / 1000,
        );
        record(&mut h, micros);
    }
    Ok(h)
}

/// `--pending N`: N timers due in a day, in `<queue>-pending`, loaded before the measured
/// window by [`PENDING_LOADERS`] concurrent requests of [`PENDING_BATCH`] schedules, as fast
/// as the broker takes them. Then reads how many the tenant has pending, and the broker's
/// lateness histogram as the run starts.
pub(crate) async fn prepare(ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let book = book(ctx);
    let n = ctx.args.pending;
    let started = Instant::now();
    if n > 0 {
        let next = Arc::new(AtomicU64::new(0));
        let loaded = Arc::new(AtomicU64::new(0));
        let progress = (!ctx.args.quiet).then(|| {
            let loaded = loaded.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                tick.tick().await;
                loop {
                    tick.tick().await;
                    eprintln!(
                        "[{:>5.1}s] pending timers loaded: {} of {n}",
                        started.elapsed().as_secs_f64(),
                        loaded.load(Relaxed)
                    );
                }
            })
        });
        let tasks: Vec<_> = (0..PENDING_LOADERS)
            .map(|_| {
                let (ctx, next, loaded) = (ctx.clone(), next.clone(), loaded.clone());
                tokio::spawn(async move {
                    let queue = pending_queue(&ctx.queue);
                    loop {
                        let from = next.fetch_add(PENDING_BATCH, Relaxed);
                        if from >= n {
                            return Ok::<_, anyhow::Error>(());
                        }
                        let ops: Vec<Value> = (from..(from + PENDING_BATCH).min(n))
                            .map(|i| {
                                let key = format!("pending-{i}");
                                schedule_op(&queue, &key, None, PENDING_DELAY_MS, "Default")
                            })
                            .collect();
                        let k = ops.len() as u64;
                        let results = post(&ctx, json!({ "operations": ops }).to_string())
                            .await
                            .map_err(|e| anyhow::anyhow!("loading the pending timers: {e}"))?;
                        anyhow::ensure!(
                            results.len() as u64 == k && results.iter().all(|r| r.ok),
                            "loading the pending timers: a schedule was refused"
                        );
                        loaded.fetch_add(k, Relaxed);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        if let Some(p) = progress {
            p.abort();
        }
        let mut load = book.pending.lock().unwrap();
        load.loaded = loaded.load(Relaxed);
        load.seconds = started.elapsed().as_secs_f64();
        if !ctx.args.quiet {
            eprintln!(
                "[{:>5.1}s] {} pending timers loaded",
                load.seconds, load.loaded
            );
        }
    }
    let in_tenant = pending_in_tenant(ctx).await;
    book.pending.lock().unwrap().in_tenant = in_tenant;
    *book.broker_before.lock().unwrap() = broker_buckets(ctx).await;
    Ok(())
}

#[derive(Deserialize)]
struct TimerQueues {
    #[serde(default)]
    queues: Vec<TimerQueue>,
}

#[derive(Deserialize)]
struct TimerQueue {
    #[serde(default)]
    pending: u64,
}

/// Timers pending in the tenant, every queue (`GET /api/v1/timers`).
async fn pending_in_tenant(ctx: &Ctx) -> Option<u64> {
    let r = ctx
        .http
        .get(format!("{}/api/v1/timers", ctx.args.url))
        .send()
        .await
        .ok()?;
    let q: TimerQueues = r.error_for_status().ok()?.json().await.ok()?;
    Some(q.queues.iter().map(|q| q.pending).sum())
}

// ------------------------------------------------------------------------------ consumers

#[derive(Deserialize)]
struct Popped {
    #[serde(default)]
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(rename = "transactionId")]
    txid: String,
}

/// Long-polls the timer queue (acknowledged at delivery) until told to stop, booking each
/// message's arrival. Returns an empty histogram: lateness is computed from the book at the
/// end, when every promise is known.
pub(crate) async fn consumer(ctx: Arc<Ctx>) -> anyhow::Result<Histogram<u64>> {
    let book = book(&ctx);
    let url = format!(
        "{}/api/v1/pop/queue/{}?batch={}&partitions={}&wait=true&timeout=1000&autoAck=true",
        ctx.args.pop_url(),
        ctx.queue,
        ctx.args.pop_batch.max(1),
        ctx.args.pop_partitions.max(1)
    );
    while !ctx.shared.stop_consumers.load(Relaxed) {
        let began = Instant::now();
        let answer = match ctx.http.get(&url).send().await {
            Ok(r) if r.status().is_success() => r.bytes().await.ok(),
            _ => None,
        };
        let at = unix_micros();
        ctx.shared.pop_requests.fetch_add(1, Relaxed);
        let Some(pop) = answer.and_then(|b| serde_json::from_slice::<Popped>(&b).ok()) else {
            ctx.shared.errors.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        if pop.messages.is_empty() {
            // Until the first timer fires the queue does not exist, and a pop of it answers
            // at once: asked again shortly, not in a busy loop.
            if began.elapsed() < Duration::from_millis(100) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            continue;
        }
        let n = pop.messages.len() as u64;
        book.delivered(
            pop.messages.iter().map(|m| m.txid.as_str()),
            at,
            ctx.args.trace_slower_than,
        );
        ctx.shared.delivered.fetch_add(n, Relaxed);
        if !ctx.shared.window_closed.load(Relaxed) {
            ctx.shared.delivered_in_window.fetch_add(n, Relaxed);
        }
    }
    Ok(histogram())
}

// ------------------------------------------------------------------------------ the end

/// After the consumers stopped: the figures, and the lateness histogram (µs) for the report.
pub(crate) async fn finish(
    ctx: &Ctx,
    seconds: f64,
    schedule: &Histogram<u64>,
) -> anyhow::Result<(TimerFigures, Histogram<u64>)> {
    let book = book(ctx);
    let after = broker_buckets(ctx).await;
    let before = book.broker_before.lock().unwrap().clone();
    let mut late = histogram();
    let mut f = TimerFigures {
        rate: rate(&ctx.args),
        delay_ms: ctx.args.timer_delay_ms,
        batch: ctx.args.timer_batch.max(1),
        refused: book.refused.load(Relaxed),
        schedule_latency: percentiles(schedule),
        ..TimerFigures::default()
    };
    for e in book.entries.lock().unwrap().values() {
        match (e.deliver_at, e.arrivals.first()) {
            (Some(_), None) => f.missing += 1,
            (None, Some(_)) => f.unknown += e.arrivals.len() as u64,
            (Some(due), Some(&first)) => {
                f.delivered += 1;
                f.duplicates += e.arrivals.len() as u64 - 1;
                if first < due {
                    f.early += 1;
                }
                record(&mut late, first.saturating_sub(due));
            }
            (None, None) => {}
        }
    }
    f.scheduled = book.promised.load(Relaxed);
    f.schedule_rate = f.scheduled as f64 / seconds.max(1e-9);
    let load = *book.pending.lock().unwrap();
    f.pending_loaded = load.loaded;
    f.pending_load_seconds = load.seconds;
    f.pending_load_rate = load.loaded as f64 / load.seconds.max(1e-9);
    f.pending_at_start = load.in_tenant;
    f.lateness = percentiles(&late);
    f.broker_lateness = match (before, after) {
        (Some(b), Some(a)) => Some(a.since(&b).lateness()),
        _ => None,
    };
    Ok((f, late))
}

/// The `regent_timer_lateness_seconds` histogram, summed over the tenants listed: the
/// cumulative count at each bound (seconds; `+Inf` last), the sum and the count.
#[derive(Clone, Debug, Default, PartialEq)]
struct Buckets {
    bounds: Vec<(f64, u64)>,
    sum: f64,
    count: u64,
}

const FAMILY: &str = "regent_timer_lateness_seconds";

/// From the admin route (the token's tenant; with authentication off, `default`), else the
/// public exposition (every tenant, when `METRICS_PER_QUEUE` is on). `None` when neither
/// lists the family.
async fn broker_buckets(ctx: &Ctx) -> Option<Buckets> {
    for path in ["/api/v1/metrics/queues", "/metrics/prometheus"] {
        let Ok(r) = ctx.http.get(format!("{}{path}", ctx.args.url)).send().await else {
            continue;
        };
        let Ok(text) = r.error_for_status().map(|r| r.text()) else {
            continue;
        };
        if let Some(b) = text.await.ok().and_then(|t| parse_buckets(&t)) {
            return Some(b);
        }
    }
    None
}

/// The family from a text exposition; `None` when it is not there (its HELP line, with no
/// sample yet, is an empty histogram).
fn parse_buckets(text: &str) -> Option<Buckets> {
    if !text.contains(&format!("# TYPE {FAMILY} histogram")) {
        return None;
    }
    let mut b = Buckets::default();
    let mut bounds: Vec<(f64, u64)> = Vec::new();
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some(rest) = name.strip_prefix(FAMILY) else {
            continue;
        };
        if rest.starts_with("_bucket{") {
            let le = rest
                .split("le=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .and_then(|s| match s {
                    "+Inf" => Some(f64::INFINITY),
                    s => s.parse().ok(),
                });
            let (Some(le), Ok(n)) = (le, value.parse::<u64>()) else {
                continue;
            };
            match bounds.iter_mut().find(|(bound, _)| *bound == le) {
                Some(entry) => entry.1 += n,
                None => bounds.push((le, n)),
            }
        } else if rest.starts_with("_sum{") {
            b.sum += value.parse::<f64>().unwrap_or(0.0);
        } else if rest.starts_with("_count{") {
            b.count += value.parse::<u64>().unwrap_or(0);
        }
    }
    bounds.sort_by(|x, y| x.0.total_cmp(&y.0));
    b.bounds = bounds;
    Some(b)
}

impl Buckets {
    /// What was added since `before`.
    fn since(&self, before: &Buckets) -> Buckets {
        let was = |le: f64| {
            before
                .bounds
                .iter()
                .find(|(b, _)| *b == le)
                .map_or(0, |x| x.1)
        };
        Buckets {
            bounds: self
                .bounds
                .iter()
                .map(|&(le, n)| (le, n.saturating_sub(was(le))))
                .collect(),
            sum: (self.sum - before.sum).max(0.0),
            count: self.count.saturating_sub(before.count),
        }
    }

    fn lateness(&self) -> BrokerLateness {
        let at = |q: f64| {
            let want = (q * self.count as f64).ceil().max(1.0) as u64;
            self.bounds
                .iter()
                .find(|(_, n)| *n >= want)
                .and_then(|(le, _)| le.is_finite().then_some(le * 1000.0))
        };
        let some = self.count > 0;
        BrokerLateness {
            fired: self.count,
            mean_ms: self.sum * 1000.0 / self.count.max(1) as f64,
            p50_le_ms: at(0.5).filter(|_| some),
            p90_le_ms: at(0.9).filter(|_| some),
            p99_le_ms: at(0.99).filter(|_| some),
        }
    }
}

/// The report's timer lines.
pub(crate) fn text(f: &TimerFigures) -> String {
    let pending = match f.pending_at_start {
        Some(n) => format!("{n} pending in the tenant at the start"),
        None => "pending in the tenant unknown".to_string(),
    };
    let mut s = format!(
        "timers: {:.0}/s target, delay {} ms, {} per request; {} pending loaded in {:.1} s ({:.0}/s), {pending}\n",
        f.rate, f.delay_ms, f.batch, f.pending_loaded, f.pending_load_seconds, f.pending_load_rate
    );
    s += &format!(
        "timers {}: {} scheduled ({:.0}/s), {} delivered, {} missing, {} duplicates, {} unknown, {} early, {} refused\n",
        if f.ok() { "OK" } else { "FAILED" },
        f.scheduled,
        f.schedule_rate,
        f.delivered,
        f.missing,
        f.duplicates,
        f.unknown,
        f.early,
        f.refused
    );
    if let Some(b) = &f.broker_lateness {
        let le = |v: Option<f64>| v.map_or("> 60000".to_string(), |ms| format!("<= {ms}"));
        s += &format!(
            "broker lateness (regent_timer_lateness_seconds, fire commit - deliverAt, bucket bounds): p50 {} ms  p90 {} ms  p99 {} ms  mean {:.2} ms  ({} fired)\n",
            le(b.p50_le_ms),
            le(b.p90_le_ms),
            le(b.p99_le_ms),
            b.mean_ms,
            b.fired
        );
    }
    s += "late = pop answer (generator's clock) - deliverAt (database's clock): one clock on one machine\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "# HELP regent_timer_lateness_seconds How long.\n# TYPE regent_timer_lateness_seconds histogram\n";

    fn exposition(counts: [u64; 3], sum: f64) -> String {
        let mut s = BEFORE.to_string();
        for tenant in ["a", "b"] {
            s += &format!(
                "regent_timer_lateness_seconds_bucket{{tenant=\"{tenant}\",le=\"0.005\"}} {}\n\
                 regent_timer_lateness_seconds_bucket{{tenant=\"{tenant}\",le=\"0.01\"}} {}\n\
                 regent_timer_lateness_seconds_bucket{{tenant=\"{tenant}\",le=\"+Inf\"}} {}\n\
                 regent_timer_lateness_seconds_sum{{tenant=\"{tenant}\"}} {sum}\n\
                 regent_timer_lateness_seconds_count{{tenant=\"{tenant}\"}} {}\n",
                counts[0], counts[1], counts[2], counts[2]
            );
        }
        s
    }

    #[test]
    fn the_broker_histogram_is_summed_over_tenants_and_taken_since_the_start() {
        assert_eq!(parse_buckets("regent_up 1\n"), None);
        let empty = parse_buckets(BEFORE).unwrap();
        assert_eq!(empty.count, 0);
        let before = parse_buckets(&exposition([1, 1, 1], 0.004)).unwrap();
        let after = parse_buckets(&exposition([50, 95, 101], 1.0)).unwrap();
        let d = after.since(&before);
        assert_eq!(d.count, 200);
        assert_eq!(
            d.bounds,
            vec![(0.005, 98), (0.01, 188), (f64::INFINITY, 200)]
        );
        let l = d.lateness();
        assert_eq!(l.fired, 200);
        assert_eq!(l.p50_le_ms, Some(10.0));
        assert_eq!(l.p90_le_ms, Some(10.0));
        assert_eq!(l.p99_le_ms, None, "beyond the last bound");
        assert!((l.mean_ms - 9.96).abs() < 0.01, "{}", l.mean_ms);
        let none = empty.since(&empty).lateness();
        assert_eq!((none.fired, none.p50_le_ms), (0, None));
    }

    #[test]
    fn a_delivery_before_its_promise_is_matched_when_the_promise_comes() {
        let b = Book::default();
        b.delivered(["t1"].into_iter(), 2_000, None);
        assert_eq!(b.outstanding(), 0);
        b.promised("t1", 1_000);
        b.promised("t2", 1_000);
        assert_eq!(b.outstanding(), 1);
        b.delivered(["t2", "t2"].into_iter(), 3_000, None);
        assert_eq!(b.outstanding(), 0);
        assert_eq!(
            micros_of("2026-01-02T03:04:05.678Z"),
            Some(1_767_323_045_678_000)
        );
    }
}
