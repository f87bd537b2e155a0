//! `regent bench`: a load generator for a running broker, in the spirit of `nats bench` and
//! `pgbench`. It pushes and consumes through the public HTTP API, records push and end-to-end
//! latency in HDR histograms merged across tasks, and checks a ledger at the end: every
//! transaction id the broker acknowledged as pushed must have been delivered (to every
//! consumer group) at least once. The streams scenarios run a windowed aggregation as
//! Queen's streaming SDK does, and also check that every window reached the sink exactly once
//! with the sum pushed into it. The timers scenario schedules Queen's timers at a steady rate
//! and measures how late each is delivered, and that each is delivered exactly once.

mod intervals;
mod ledger;
mod report;
mod stats;
mod streams;
mod timers;
mod windows;
mod workers;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};

pub use intervals::Interval;
pub use ledger::LedgerCheck;
pub use report::Report;
pub use streams::StreamsFigures;
pub use timers::{BrokerLateness, TimerFigures};
pub use windows::WindowCheck;

use ledger::Ledger;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Producers only.
    Push,
    /// Pre-fill a backlog, then consumers only.
    PopAck,
    /// Producers and consumers together.
    EndToEnd,
    /// End to end with several consumer groups (default 10), each receiving every message.
    FanOut,
    /// A tumbling-window sum per partition, as Queen's streaming SDK runs it: per popped
    /// partition a state read and one `/streams/v1/cycle` (state, the closed windows' sums
    /// to a sink queue, and the ack in one transaction).
    Streams,
    /// The same pops, acks and sink pushes through `/api/v1/transaction`, the windows kept in
    /// memory: what a cycle costs beyond a plain transaction.
    StreamsTx,
    /// Queen's timers: producers schedule timers (`POST /api/v1/timers`) at `--rate`
    /// (1,000/s when 0), each due `--timer-delay-ms` later, consumers pop their queue, and
    /// the report gives each timer's lateness (arrival minus its promised `deliverAt`) and
    /// whether each was delivered exactly once; `--pending` first loads timers due in a day.
    Timers,
}

impl Scenario {
    fn streams(self) -> bool {
        matches!(self, Scenario::Streams | Scenario::StreamsTx)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckMode {
    /// Ack the last message of each partition of a batch, with its lease.
    Explicit,
    /// `autoAck=true` on pop: committed at delivery.
    Auto,
}

#[derive(Clone, Debug, Args, serde::Serialize)]
pub struct BenchArgs {
    /// The broker to load.
    #[arg(long, default_value = "http://127.0.0.1:6632")]
    pub url: String,
    /// The broker consumers pop from and ack on (default: `--url`). Another broker on the same
    /// database measures how soon a push through one broker reaches a consumer parked on
    /// another, which in-process wakeups alone cannot see.
    #[arg(long)]
    pub pop_url: Option<String>,
    #[arg(long, value_enum, default_value = "end-to-end")]
    pub scenario: Scenario,
    /// Queue name (default: a fresh `bench-<id>` per run).
    #[arg(long)]
    pub queue: Option<String>,
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// Consumers per consumer group.
    #[arg(long, default_value_t = 4)]
    pub consumers: usize,
    /// Messages per push request.
    #[arg(long, default_value_t = 100)]
    pub push_batch: usize,
    /// Messages per pop request.
    #[arg(long, default_value_t = 100)]
    pub pop_batch: usize,
    /// Partitions claimed per pop request.
    #[arg(long, default_value_t = 1)]
    pub pop_partitions: usize,
    /// Approximate payload size in bytes.
    #[arg(long, default_value_t = 256)]
    pub payload: usize,
    #[arg(long, default_value_t = 100)]
    pub partitions: usize,
    /// Consumer groups (fan-out default: 10).
    #[arg(long)]
    pub groups: Option<usize>,
    /// Measured seconds (producers stop after this; consumers then drain).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    #[arg(long, value_enum, default_value = "explicit")]
    pub ack: AckMode,
    /// Explicit acks only: every Nth batch a consumer takes is nacked (`failed`) instead of
    /// acknowledged, so it is redelivered, and its latency is counted at the redelivery
    /// (0 = never). Measures how soon a retry reaches a consumer.
    #[arg(long, default_value_t = 0)]
    pub nack_every: u64,
    /// Milliseconds a consumer waits after a nack before it pops again, as one backing off
    /// from a failing dependency does: the retry is then the other consumers' to take.
    #[arg(long, default_value_t = 0)]
    pub nack_backoff: u64,
    /// Open loop: total messages per second on a fixed schedule (0 = closed loop, as fast as
    /// answers come; timers: 0 = 1,000 timers/s). Latency is measured from the scheduled send
    /// time, so a slow broker cannot hide queueing behind the generator's own waiting (a
    /// producer idle until then counts from when its timer woke it, at most 1 ms later:
    /// tokio's timer tick is the generator's, not the broker's).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// pop-ack, and the streams scenarios with `--producers 0`: messages to pre-fill before
    /// consuming.
    #[arg(long, default_value_t = 100_000)]
    pub prefill: u64,
    /// Streams scenarios: the tumbling window's length, milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub window_ms: u64,
    /// Streams scenarios, closed loop: producers wait while more pushed messages than this
    /// are not yet committed by a step (0 = no bound), so the consumers have full batches
    /// without a backlog that grows all run (and makes the drain, and every window's
    /// latency, as long as the run).
    #[arg(long, default_value_t = 10_000)]
    pub max_backlog: u64,
    /// Timers: each timer's delay, milliseconds from the database's `now()`.
    #[arg(long, default_value_t = 1000)]
    pub timer_delay_ms: u64,
    /// Timers: schedule operations per `POST /api/v1/timers`.
    #[arg(long, default_value_t = 20)]
    pub timer_batch: usize,
    /// Timers: timers due in a day loaded into `<queue>-pending` before the measured window
    /// (1,000 per request, 4 requests at a time), so the measured timers fire beside them.
    #[arg(long, default_value_t = 0)]
    pub pending: u64,
    /// Seconds the consumers get after the measured window to deliver the rest (timers:
    /// after the last timer's delay too); timers not delivered by then are missing.
    #[arg(long, default_value_t = 30.0)]
    pub drain_timeout: f64,
    /// A bearer token sent with every request, for a broker with authentication on.
    #[arg(long, env = "REGENT_TOKEN")]
    pub token: Option<String>,
    /// PostgreSQL URL of the broker's database, to report commits/s (optional).
    #[arg(long)]
    pub pg_url: Option<String>,
    /// Print every push answered, and every message delivered, later than this many
    /// milliseconds after it was due, with the wall-clock time (Unix ms) on stderr: a tail
    /// named by the second it happened in can be lined up with PostgreSQL's log.
    #[arg(long)]
    pub trace_slower_than: Option<u64>,
    /// Seconds per interval: the report gives the messages pushed and delivered in each
    /// interval of the measured window (`intervals` in JSON, a line each in text), to see
    /// how the rates move during a run.
    #[arg(long, value_parser = intervals::every)]
    pub interval: Option<f64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// No live progress line.
    #[arg(long)]
    pub quiet: bool,
}

impl BenchArgs {
    /// Where consumers pop and ack.
    pub(crate) fn pop_url(&self) -> &str {
        self.pop_url.as_deref().unwrap_or(&self.url)
    }

    /// Consumers on a pre-filled backlog, no producer: pop-ack, and the streams scenarios
    /// with `--producers 0`. The measured window ends when the backlog is consumed.
    fn consumers_alone(&self) -> bool {
        self.scenario == Scenario::PopAck || (self.scenario.streams() && self.producers == 0)
    }

    fn groups(&self) -> usize {
        if self.scenario.streams() || self.scenario == Scenario::Timers {
            return 1;
        }
        self.groups
            .unwrap_or(if self.scenario == Scenario::FanOut {
                10
            } else {
                1
            })
            .max(1)
    }
}

/// Counters shared by every task.
#[derive(Default)]
pub(crate) struct Shared {
    pub pushed: AtomicU64,
    pub push_requests: AtomicU64,
    pub delivered: AtomicU64,
    pub pop_requests: AtomicU64,
    pub errors: AtomicU64,
    /// What the first failed push said, so a report with errors says which.
    pub first_error: std::sync::Mutex<Option<String>>,
    pub stop_producers: AtomicBool,
    pub stop_consumers: AtomicBool,
    /// Counting deliveries into the measured window stops when this is set.
    pub window_closed: AtomicBool,
    pub delivered_in_window: AtomicU64,
}

/// Runs one benchmark against `args.url` (consumers on `args.pop_url`) and returns its report:
/// set up, the measured window, the drain, then the checks and figures.
pub async fn run(mut args: BenchArgs) -> anyhow::Result<Report> {
    // Resolved here so the report names the broker consumers used even when it was the default.
    args.pop_url = Some(args.pop_url().to_string());
    let queue = args
        .queue
        .clone()
        .unwrap_or_else(|| format!("bench-{}", uuid::Uuid::now_v7().simple()));
    let groups = args.groups();
    let http = client(&args, groups)?;
    let shared = Arc::new(Shared::default());
    let ledgers: Arc<Vec<Ledger>> = Arc::new((0..groups).map(|_| Ledger::default()).collect());
    let streams = if args.scenario.streams() {
        Some(streams::Pipeline::start(&http, &args, &queue).await?)
    } else {
        None
    };
    let ctx = Arc::new(workers::Ctx {
        args: args.clone(),
        queue: queue.clone(),
        http,
        shared: shared.clone(),
        ledgers: ledgers.clone(),
        streams,
        timers: (args.scenario == Scenario::Timers).then(timers::Book::default),
    });
    prepare(&ctx).await?;

    // Commits and CPU count from here, after any prefill, as a script measuring the broker's
    // CPU does.
    let commits_before = report::commits(args.pg_url.as_deref()).await;
    let cpu_before = report::process_cpu_seconds();
    if !args.quiet {
        eprintln!("[  0.0s] measuring");
    }
    let started = Instant::now();
    let pushed_before = shared.pushed.load(Ordering::SeqCst);
    let sampler = args
        .interval
        .map(|every| intervals::Sampler::start(shared.clone(), started, every));
    let producers = spawn_producers(&ctx);
    let consumers = spawn_consumers(&ctx, groups);
    let progress = (!args.quiet).then(|| tokio::spawn(report::progress(shared.clone(), started)));
    measured_window(&ctx, started).await;
    let measured = started.elapsed();
    let intervals = sampler.map(intervals::Sampler::finish);
    shared.window_closed.store(true, Ordering::SeqCst);
    let pushed_in_window = shared.pushed.load(Ordering::SeqCst) - pushed_before;
    shared.stop_producers.store(true, Ordering::SeqCst);
    let mut push_hist = stats::histogram();
    for p in producers {
        push_hist.add(&p.await??)?;
    }
    drain(&ctx).await;
    shared.stop_consumers.store(true, Ordering::SeqCst);
    let mut e2e_hist = stats::histogram();
    for c in consumers {
        e2e_hist.add(&c.await??)?;
    }
    if let Some(p) = progress {
        p.abort();
    }
    let cpu = report::process_cpu_seconds() - cpu_before;
    let commits = match (
        commits_before,
        report::commits(args.pg_url.as_deref()).await,
    ) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let mut ledger = (args.scenario != Scenario::Push && ctx.timers.is_none())
        .then(|| ledger::check_all(&ledgers));
    // After the commits were read: the final flush and the sink's read-back are not the run's.
    let mut figures = None;
    if ctx.streams.is_some() {
        let (f, windows) = streams::finish(&ctx, measured.as_secs_f64(), commits).await?;
        figures = Some(f);
        if let Some(l) = ledger.as_mut() {
            l.windows = Some(windows);
        }
    }
    let mut timer_figures = None;
    if ctx.timers.is_some() {
        let (f, lateness) = timers::finish(&ctx, measured.as_secs_f64(), &push_hist).await?;
        timer_figures = Some(f);
        e2e_hist = lateness;
    }
    let mut report = Report::new(
        &args,
        queue,
        groups,
        measured,
        pushed_in_window,
        &shared,
        &push_hist,
        &e2e_hist,
        ledger,
        commits,
        cpu,
    );
    report.streams = figures;
    report.timers = timer_figures;
    report.intervals = intervals;
    Ok(report)
}

/// The HTTP client every task shares: the token on every request, and an idle connection
/// kept for each task.
fn client(args: &BenchArgs, groups: usize) -> anyhow::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = &args.token {
        let value = format!("Bearer {t}")
            .parse()
            .map_err(|_| anyhow::anyhow!("--token is not a valid header value"))?;
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(args.producers + args.consumers * groups + 4)
        .timeout(Duration::from_secs(60))
        .build()?)
}

/// What the scenario loads before the measured window: a backlog to consume, or the timers.
async fn prepare(ctx: &Arc<workers::Ctx>) -> anyhow::Result<()> {
    let args = &ctx.args;
    if args.scenario == Scenario::PopAck {
        workers::prefill(ctx).await?;
    }
    if args.consumers_alone() && args.scenario.streams() {
        streams::prefill(ctx).await?;
    }
    if ctx.timers.is_some() {
        timers::prepare(ctx).await?;
    }
    Ok(())
}

type Task = tokio::task::JoinHandle<anyhow::Result<hdrhistogram::Histogram<u64>>>;

/// The scenario's producers, each returning its push latencies.
fn spawn_producers(ctx: &Arc<workers::Ctx>) -> Vec<Task> {
    let n = ctx.args.producers;
    match ctx.args.scenario {
        Scenario::PopAck => vec![],
        Scenario::Streams | Scenario::StreamsTx => (0..n)
            .map(|p| tokio::spawn(streams::producer(ctx.clone(), p)))
            .collect(),
        Scenario::Timers => (0..n.max(1))
            .map(|p| tokio::spawn(timers::producer(ctx.clone(), p)))
            .collect(),
        Scenario::Push | Scenario::EndToEnd | Scenario::FanOut => (0..n)
            .map(|p| tokio::spawn(workers::producer(ctx.clone(), p)))
            .collect(),
    }
}

/// The scenario's consumers (`consumers` per group), each returning its end-to-end latencies.
fn spawn_consumers(ctx: &Arc<workers::Ctx>, groups: usize) -> Vec<Task> {
    let n = ctx.args.consumers;
    match ctx.args.scenario {
        Scenario::Push => vec![],
        Scenario::Streams | Scenario::StreamsTx => (0..n)
            .map(|_| tokio::spawn(streams::consumer(ctx.clone())))
            .collect(),
        Scenario::Timers => (0..n.max(1))
            .map(|_| tokio::spawn(timers::consumer(ctx.clone())))
            .collect(),
        Scenario::PopAck | Scenario::EndToEnd | Scenario::FanOut => (0..groups)
            .flat_map(|g| (0..n).map(move |_| g))
            .map(|g| tokio::spawn(workers::consumer(ctx.clone(), g)))
            .collect(),
    }
}

/// Waits out the measured window: `--duration`, or until a pre-filled backlog is consumed.
async fn measured_window(ctx: &workers::Ctx, started: Instant) {
    let window = Duration::from_secs_f64(ctx.args.duration);
    loop {
        let elapsed = started.elapsed();
        if elapsed >= window {
            return;
        }
        if ctx.args.consumers_alone() && ctx.ledgers.iter().all(|l| l.outstanding() == 0) {
            return;
        }
        tokio::time::sleep((window - elapsed).min(Duration::from_millis(100))).await;
    }
}

/// Consumers keep going until every acknowledged push was delivered (every promised timer,
/// whose last is due a delay after the window), for `--drain-timeout` at most.
async fn drain(ctx: &workers::Ctx) {
    if ctx.args.scenario == Scenario::Push {
        return;
    }
    let mut drain = Duration::from_secs_f64(ctx.args.drain_timeout);
    if ctx.timers.is_some() {
        drain += Duration::from_millis(ctx.args.timer_delay_ms);
    }
    let deadline = Instant::now() + drain;
    let outstanding = || {
        ctx.ledgers.iter().any(|l| l.outstanding() > 0)
            || ctx.timers.as_ref().is_some_and(|t| t.outstanding() > 0)
    };
    while outstanding() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
