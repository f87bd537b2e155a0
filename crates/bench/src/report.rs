//! What a run measured, as text or JSON, and the live progress line.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::intervals::{self, Interval};
use super::ledger::LedgerCheck;
use super::stats::{percentiles, Percentiles};
use super::streams::StreamsFigures;
use super::timers::{self, TimerFigures};
use super::{BenchArgs, Scenario, Shared};

#[derive(Debug, Serialize)]
pub struct Report {
    pub args: BenchArgs,
    pub queue: String,
    pub groups: usize,
    /// Length of the measured window, seconds.
    pub seconds: f64,
    /// Messages the broker acknowledged as pushed in the window, and per second (timers:
    /// timers scheduled).
    pub pushed: u64,
    pub push_rate: f64,
    pub push_requests: u64,
    /// Deliveries (all groups) in the window, and per second.
    pub delivered: u64,
    pub delivery_rate: f64,
    pub pop_requests: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Timers: the schedule requests' latency.
    pub push_latency: Percentiles,
    /// Timers: each timer's lateness (its pop answer minus its `deliverAt`).
    pub end_to_end_latency: Percentiles,
    /// `None` for push-only runs.
    pub ledger: Option<LedgerCheck>,
    /// PostgreSQL commits in the database during the run (with `--pg-url`), and per second.
    pub commits: Option<u64>,
    pub commit_rate: Option<f64>,
    /// CPU seconds the generator itself used, and as a share of one core.
    pub generator_cpu_seconds: f64,
    pub generator_cores: f64,
    /// The streams scenarios' steps, windows and window latency.
    pub streams: Option<StreamsFigures>,
    /// The timers scenario's counts, lateness and pending load.
    pub timers: Option<TimerFigures>,
    /// With `--interval`: what each interval of the measured window pushed and delivered.
    pub intervals: Option<Vec<Interval>>,
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        args: &BenchArgs,
        queue: String,
        groups: usize,
        measured: Duration,
        pushed_in_window: u64,
        shared: &Shared,
        push: &Histogram<u64>,
        e2e: &Histogram<u64>,
        ledger: Option<LedgerCheck>,
        commits: Option<u64>,
        cpu: f64,
    ) -> Report {
        let secs = measured.as_secs_f64().max(1e-9);
        let delivered = shared.delivered_in_window.load(Relaxed);
        Report {
            args: args.clone(),
            queue,
            groups,
            seconds: secs,
            pushed: pushed_in_window,
            push_rate: pushed_in_window as f64 / secs,
            push_requests: shared.push_requests.load(Relaxed),
            delivered,
            delivery_rate: delivered as f64 / secs,
            pop_requests: shared.pop_requests.load(Relaxed),
            errors: shared.errors.load(Relaxed),
            first_error: shared.first_error.lock().unwrap().clone(),
            push_latency: percentiles(push),
            end_to_end_latency: percentiles(e2e),
            ledger,
            commits,
            commit_rate: commits.map(|c| c as f64 / secs),
            generator_cpu_seconds: cpu,
            generator_cores: cpu / secs,
            streams: None,
            timers: None,
            intervals: None,
        }
    }

    pub fn text(&self) -> String {
        let timers = self.args.scenario == Scenario::Timers;
        let mut s = if timers {
            format!(
                "scenario Timers, queue {}, {} partitions, {} producers x batch {}, {} consumers x batch {}, {:.1} s\n",
                self.queue, self.args.partitions, self.args.producers, self.args.timer_batch,
                self.args.consumers, self.args.pop_batch, self.seconds
            )
        } else {
            format!(
                "scenario {:?}, queue {}, {} partitions, {} group(s), {} producers x batch {}, {} consumers x batch {}, {} B payloads, {:.1} s\n",
                self.args.scenario, self.queue, self.args.partitions, self.groups, self.args.producers,
                self.args.push_batch, self.args.consumers, self.args.pop_batch, self.args.payload, self.seconds
            )
        };
        if self.args.pop_url() != self.args.url {
            s += &format!(
                "producers on {}, consumers on {}\n",
                self.args.url,
                self.args.pop_url()
            );
        }
        s += &format!(
            "in   {:>12.0} msg/s  ({} messages, {} push requests)\n",
            self.push_rate, self.pushed, self.push_requests
        );
        s += &format!(
            "out  {:>12.0} msg/s  ({} deliveries, {} pop requests)\n",
            self.delivery_rate, self.delivered, self.pop_requests
        );
        if let (Some(c), Some(r)) = (self.commits, self.commit_rate) {
            s += &format!(
                "commits {:>8.0} /s    ({} commits, {:.1} messages per commit)\n",
                r,
                c,
                self.pushed as f64 / c.max(1) as f64
            );
        }
        let lat = |name: &str, p: &Percentiles| {
            format!(
                "{name:<5} p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms  ({} samples)\n",
                p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms, p.max_ms, p.count
            )
        };
        if let Some(t) = &self.timers {
            s += &lat("sched", &self.push_latency);
            s += &lat("late", &self.end_to_end_latency);
            s += &timers::text(t);
        } else {
            s += &lat("push", &self.push_latency);
            s += &lat("e2e", &self.end_to_end_latency);
        }
        if let Some(f) = &self.streams {
            s += &streams_text(f);
            s += &lat("step", &f.step_latency);
            s += &lat("window", &f.window_latency);
        }
        if let Some(i) = &self.intervals {
            s += &intervals::text(i);
        }
        s += &format!("errors {}\n", self.errors);
        if let Some(e) = &self.first_error {
            s += &format!("first error: {e}\n");
        }
        if let Some(l) = &self.ledger {
            s += &format!(
                "ledger {}: {} pushed, {} delivered, {} lost, {} duplicate deliveries, {} unknown\n",
                if l.ok() { "OK" } else { "FAILED" },
                l.pushed,
                l.delivered_unique,
                l.lost,
                l.duplicates,
                l.unknown
            );
        }
        if let Some(w) = self.ledger.as_ref().and_then(|l| l.windows.as_ref()) {
            s += &format!(
                "windows {}: {} pushed into, {} results in the sink, {} exact, {} wrong sums, {} missing, {} duplicates, {} unknown\n",
                if w.ok() { "OK" } else { "FAILED" },
                w.windows,
                w.emitted,
                w.exact,
                w.wrong_sum,
                w.missing,
                w.duplicates,
                w.unknown
            );
        }
        s += &format!(
            "generator cpu {:.2} s ({:.2} cores)\n",
            self.generator_cpu_seconds, self.generator_cores
        );
        s
    }
}

/// The streams scenarios' steps and windows.
fn streams_text(f: &StreamsFigures) -> String {
    let per_cycle = f
        .commits_per_cycle
        .map(|c| format!(", {c:.2} commits per cycle"))
        .unwrap_or_default();
    format!(
        "cycles {:>10.0} /s    ({} in the window, {} in all, {:.1} messages per cycle, {} state reads{per_cycle})\n\
         windows {:>9.1} /s    ({} emitted in the window, {} at the final flush)\n",
        f.cycle_rate,
        f.cycles,
        f.cycles_total,
        f.messages_per_cycle,
        f.state_reads,
        f.window_rate,
        f.windows,
        f.flushed
    )
}

/// A line a second on stderr while the run goes.
pub(crate) async fn progress(shared: Arc<Shared>, started: Instant) {
    let (mut last_in, mut last_out) = (0u64, 0u64);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let (i, o) = (shared.pushed.load(Relaxed), shared.delivered.load(Relaxed));
        eprintln!(
            "[{:>5.1}s] in {:>9} msg/s  out {:>9} msg/s  errors {}",
            started.elapsed().as_secs_f64(),
            i - last_in,
            o - last_out,
            shared.errors.load(Relaxed)
        );
        (last_in, last_out) = (i, o);
    }
}

/// Commits so far in the broker's database, when we were told where it is.
pub(crate) async fn commits(pg_url: Option<&str>) -> Option<u64> {
    let (client, conn) = tokio_postgres::connect(pg_url?, tokio_postgres::NoTls)
        .await
        .ok()?;
    let h = tokio::spawn(conn);
    let n: i64 = client
        .query_one(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
        .ok()?
        .get(0);
    drop(client);
    let _ = h.await;
    Some(n as u64)
}

/// User plus system CPU time of this process, from /proc.
pub(crate) fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz.max(1.0)
}
