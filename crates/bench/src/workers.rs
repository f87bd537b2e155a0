//! The producer and consumer loops.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use serde::Deserialize;

use super::ledger::{txid, Ledger};
use super::stats::{histogram, record, trace_slow};
use super::streams::Pipeline;
use super::timers::Book;
use super::{AckMode, BenchArgs, Shared};

pub(crate) struct Ctx {
    pub args: BenchArgs,
    pub queue: String,
    pub http: reqwest::Client,
    pub shared: Arc<Shared>,
    pub ledgers: Arc<Vec<Ledger>>,
    /// The streams scenarios' shared state.
    pub streams: Option<Pipeline>,
    /// The timers scenario's promises and arrivals.
    pub timers: Option<Book>,
}

pub(crate) fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// One push body of `n` messages of producer `p` from `seq`, all to one partition (as a
/// client batching per key does), the partition rotating from request to request; the
/// payload carries its send time for the end-to-end latency.
fn push_body(ctx: &Ctx, p: usize, seq: u64, n: usize, sent_at: u64, pad: &Pad) -> String {
    let mut b = String::with_capacity(n * (ctx.args.payload + 120));
    b.push_str("{\"items\":[");
    let request = seq / ctx.args.push_batch.max(1) as u64;
    let partition = (p as u64 * 7919 + request) % ctx.args.partitions.max(1) as u64;
    for i in 0..n {
        if i > 0 {
            b.push(',');
        }
        let s = seq + i as u64;
        let _ = write!(
            b,
            r#"{{"queue":"{}","partition":"p{}","transactionId":"{}","payload":{{"t":{},"pad":"{}"}}}}"#,
            ctx.queue,
            partition,
            txid(p, s),
            sent_at,
            pad.for_message(p, s)
        );
    }
    b.push_str("]}");
    b
}

/// Filler that does not compress: each message takes its own window of a 1 MiB run of
/// pseudo-random letters, so neither a run of one letter nor the same filler repeated in every
/// message of a segment lets TOAST's compression flatter the figures.
pub(crate) struct Pad {
    source: String,
    len: usize,
}

const PAD_SOURCE: usize = 1 << 20;

pub(crate) fn pad(args: &BenchArgs) -> Pad {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let source = (0..PAD_SOURCE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (b'a' + (x % 26) as u8) as char
        })
        .collect();
    Pad {
        source,
        // {"t":1700000000000000,"pad":""} is 31 bytes.
        len: args.payload.saturating_sub(31).min(PAD_SOURCE / 2),
    }
}

impl Pad {
    pub(crate) fn for_message(&self, p: usize, seq: u64) -> &str {
        let h = (p as u64 ^ seq.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let start = (h % (PAD_SOURCE - self.len) as u64) as usize;
        &self.source[start..start + self.len]
    }
}

/// The granularity of tokio's timer: how late past its deadline a sleep may end by the
/// timer alone.
const TIMER_TICK: Duration = Duration::from_millis(1);

/// When a producer's pushes are due: at `--rate` across `producers` (open loop, each push
/// scheduled, so a late one counts its wait), or whenever the last one was answered.
pub(crate) struct Pace {
    interval: Option<Duration>,
    start: Instant,
    /// `start` as microseconds since the epoch, for the times written into payloads.
    start_unix: u64,
    tick: u32,
}

impl Pace {
    pub(crate) fn new(args: &BenchArgs, producers: usize, batch: usize) -> Pace {
        Pace::at_rate(args.rate, producers, batch)
    }

    /// `rate` items per second in all, across `producers` sending `batch` at a time (0 =
    /// closed loop).
    pub(crate) fn at_rate(rate: f64, producers: usize, batch: usize) -> Pace {
        Pace {
            interval: (rate > 0.0)
                .then(|| Duration::from_secs_f64(batch as f64 * producers as f64 / rate)),
            start: Instant::now(),
            start_unix: unix_micros(),
            tick: 0,
        }
    }

    /// Open loop: sleeps until the next push is due and returns when it counts from: when it
    /// was due, or, for a producer that was idle until then, when the timer woke it, by at
    /// most [`TIMER_TICK`] later. Closed loop: `None` (the caller decides when).
    ///
    /// tokio's timer fires on a millisecond tick at or after the deadline, so an idle
    /// producer sent up to a millisecond late, and that wait, the generator's own, was
    /// counted as the broker's latency (about 1 ms of every open-loop percentile: pushes at
    /// 200/s measured 2.1-2.3 ms at the median, 1.0-1.2 ms counted this way, BENCHMARKS.md
    /// "Issue 49, step 4"). A producer still waiting for its last answer when the next push
    /// fell due counts from the due time, as an open loop must.
    pub(crate) async fn due(&mut self) -> Option<Instant> {
        let at = self.start + self.interval? * self.tick;
        self.tick += 1;
        let idle = Instant::now() < at;
        tokio::time::sleep_until(at.into()).await;
        Some(match idle {
            true => Instant::now().clamp(at, at + TIMER_TICK),
            false => at,
        })
    }

    /// `at` as microseconds since the epoch.
    pub(crate) fn unix(&self, at: Instant) -> u64 {
        self.start_unix + (at - self.start).as_micros() as u64
    }
}

/// Pushes until told to stop; returns the push latency histogram (µs).
pub(crate) async fn producer(ctx: Arc<Ctx>, p: usize) -> anyhow::Result<Histogram<u64>> {
    let mut h = histogram();
    let url = format!("{}/api/v1/push", ctx.args.url);
    let batch = ctx.args.push_batch.max(1);
    let pad = pad(&ctx.args);
    let mut pace = Pace::new(&ctx.args, ctx.args.producers, batch);
    let mut seq = 0u64;
    while !ctx.shared.stop_producers.load(Relaxed) {
        let scheduled = match pace.due().await {
            Some(at) => at,
            None => Instant::now(),
        };
        if ctx.shared.stop_producers.load(Relaxed) {
            break;
        }
        let sent_at = pace.unix(scheduled);
        let body = push_body(&ctx, p, seq, batch, sent_at, &pad);
        let res = ctx
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await;
        ctx.shared.push_requests.fetch_add(1, Relaxed);
        match res {
            Ok(r) if r.status() == 201 => {
                let _ = r.bytes().await;
                seq += batch as u64;
                for l in ctx.ledgers.iter() {
                    l.pushed(p, seq);
                }
                ctx.shared.pushed.fetch_add(batch as u64, Relaxed);
                let micros = scheduled.elapsed().as_micros() as u64;
                trace_slow(
                    ctx.args.trace_slower_than,
                    "push",
                    micros,
                    unix_micros() / 1000,
                );
                record(&mut h, micros);
            }
            failed => {
                ctx.shared.errors.fetch_add(1, Relaxed);
                if ctx.shared.first_error.lock().unwrap().is_none() {
                    let what = match failed {
                        Ok(r) => format!(
                            "push: HTTP {} {}",
                            r.status(),
                            r.text().await.unwrap_or_default()
                        ),
                        Err(e) => format!("push: {e}"),
                    };
                    ctx.shared.first_error.lock().unwrap().get_or_insert(what);
                }
            }
        }
    }
    Ok(h)
}

/// pop-ack: fills the backlog before the measured window, as fast as the broker takes it.
pub(crate) async fn prefill(ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let per = ctx.args.prefill / ctx.args.producers.max(1) as u64;
    let tasks: Vec<_> = (0..ctx.args.producers.max(1))
        .map(|p| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let url = format!("{}/api/v1/push", ctx.args.url);
                let pad = pad(&ctx.args);
                let mut seq = 0u64;
                while seq < per {
                    let n = (per - seq).min(ctx.args.push_batch.max(1) as u64) as usize;
                    let body = push_body(&ctx, p, seq, n, unix_micros(), &pad);
                    let r = ctx
                        .http
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body)
                        .send()
                        .await?;
                    anyhow::ensure!(r.status() == 201, "prefill push failed: {}", r.status());
                    seq += n as u64;
                    for l in ctx.ledgers.iter() {
                        l.pushed(p, seq);
                    }
                    ctx.shared.pushed.fetch_add(n as u64, Relaxed);
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

#[derive(Deserialize)]
struct PopAnswer {
    #[serde(default)]
    messages: Vec<Delivered>,
    #[serde(rename = "leaseId", default)]
    lease_id: Option<String>,
}

#[derive(Deserialize)]
struct Delivered {
    #[serde(rename = "transactionId")]
    txid: String,
    #[serde(rename = "partitionId")]
    partition_id: String,
    #[serde(default)]
    data: Option<SentAt>,
}

#[derive(Deserialize)]
struct SentAt {
    t: u64,
}

#[derive(Deserialize)]
struct AckAnswer {
    success: bool,
}

/// Consumes for group `g` until told to stop; returns the end-to-end latency histogram (µs).
pub(crate) async fn consumer(ctx: Arc<Ctx>, g: usize) -> anyhow::Result<Histogram<u64>> {
    let mut h = histogram();
    let group = format!("bench-g{g}");
    let auto = ctx.args.ack == AckMode::Auto;
    let pop_url = format!(
        "{}/api/v1/pop/queue/{}?batch={}&partitions={}&wait=true&timeout=1000&consumerGroup={}{}",
        ctx.args.pop_url(),
        ctx.queue,
        ctx.args.pop_batch.max(1),
        ctx.args.pop_partitions.max(1),
        group,
        if auto { "&autoAck=true" } else { "" }
    );
    let ack_url = format!("{}/api/v1/ack/batch", ctx.args.pop_url());
    let mut batches = 0u64;
    while !ctx.shared.stop_consumers.load(Relaxed) {
        let answer = match ctx.http.get(&pop_url).send().await {
            Ok(r) if r.status().is_success() => r.bytes().await.ok(),
            _ => None,
        };
        ctx.shared.pop_requests.fetch_add(1, Relaxed);
        let Some(bytes) = answer else {
            ctx.shared.errors.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(pop) = serde_json::from_slice::<PopAnswer>(&bytes) else {
            ctx.shared.errors.fetch_add(1, Relaxed);
            continue;
        };
        if pop.messages.is_empty() {
            continue;
        }
        batches += 1;
        let nack = !auto && ctx.args.nack_every > 0 && batches.is_multiple_of(ctx.args.nack_every);
        let now = unix_micros();
        // A nacked batch's latency is the one its redelivery sees.
        for m in pop.messages.iter().filter(|_| !nack) {
            if let Some(d) = &m.data {
                let micros = now.saturating_sub(d.t);
                trace_slow(ctx.args.trace_slower_than, "delivery", micros, now / 1000);
                record(&mut h, micros);
            }
        }
        let n = pop.messages.len() as u64;
        ctx.ledgers[g].delivered(pop.messages.iter().map(|m| m.txid.as_str()));
        ctx.shared.delivered.fetch_add(n, Relaxed);
        if !ctx.shared.window_closed.load(Relaxed) {
            ctx.shared.delivered_in_window.fetch_add(n, Relaxed);
        }
        if auto {
            continue;
        }
        // Acking the last message of each partition commits the whole batch; a nack of the
        // first one retries the whole batch.
        let lease = pop.lease_id.unwrap_or_default();
        let mut chosen: Vec<(&str, &str)> = Vec::new();
        for m in &pop.messages {
            match chosen.iter_mut().find(|(p, _)| *p == m.partition_id) {
                Some(_) if nack => {}
                Some(entry) => entry.1 = &m.txid,
                None => chosen.push((&m.partition_id, &m.txid)),
            }
        }
        let status = if nack { "failed" } else { "completed" };
        let mut body = format!(r#"{{"consumerGroup":"{group}","acknowledgments":["#);
        for (i, (p, t)) in chosen.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            let _ = write!(
                body,
                r#"{{"transactionId":"{t}","partitionId":"{p}","leaseId":"{lease}","status":"{status}"}}"#
            );
        }
        body.push_str("]}");
        let acked = match ctx
            .http
            .post(&ack_url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r
                .bytes()
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<Vec<AckAnswer>>(&b).ok())
                .is_some_and(|a| a.iter().all(|x| x.success)),
            _ => false,
        };
        if !acked {
            ctx.shared.errors.fetch_add(1, Relaxed);
        }
        if nack && ctx.args.nack_backoff > 0 {
            tokio::time::sleep(Duration::from_millis(ctx.args.nack_backoff)).await;
        }
    }
    Ok(h)
}
