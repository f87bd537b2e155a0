//! `ping`, `status`, `lag`, `replay` and `maintenance`: one or two requests each.

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::{seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Format, Listing};
use crate::{when, Conn};

pub async fn ping(ctx: &Ctx) -> Outcome {
    let started = std::time::Instant::now();
    let health = ctx.client.get_once("/health").await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match ctx.format {
        Format::Table => output::line(&format!(
            "{} is {} ({} {}, database {}) in {ms:.1} ms",
            ctx.client.server(),
            text(&health, "status"),
            text(&health, "server"),
            text(&health, "version"),
            text(&health, "database"),
        ))?,
        f => output::document(f, &health)?,
    }
    Ok(Exit::Ok)
}

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

pub async fn status(ctx: &Ctx) -> Outcome {
    let overview = ctx.client.get("/api/v1/resources/overview", &[]).await?;
    let queues = ctx.client.get("/api/v1/resources/queues", &[]).await?;
    let queues = queues.get("queues").cloned().unwrap_or(json!([]));
    let brokers = brokers(ctx).await?;
    match ctx.format {
        Format::Table => {
            let n = |k: &str| {
                output::at(&overview, k)
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
            };
            output::line(&format!(
                "{}: {}, {}; messages {} ({} pending, {} of them processing, {} dead letters); \
                 in {:.1}/s, out {:.1}/s; oldest unconsumed {:.0} s",
                ctx.client.server(),
                counted(n("queues"), "queue"),
                counted(n("partitions"), "partition"),
                n("messages.total"),
                n("messages.pending"),
                n("messages.processing"),
                n("messages.deadLetter"),
                n("throughput.ingestedPerSecond"),
                n("throughput.processedPerSecond"),
                n("lag.time.max"),
            ))?;
            output::line(&match &brokers {
                Some(b) => format!("brokers seen in the last 5 minutes: {}", b.join(", ")),
                None => "brokers: an admin token lists them".to_string(),
            })?;
            let rows = queues.as_array().cloned().unwrap_or_default();
            output::listing(
                Format::Table,
                &Listing {
                    rows,
                    columns: super::queue::QUEUE_COLUMNS,
                },
            )?;
        }
        f => output::document(
            f,
            &json!({"overview": overview, "queues": queues, "brokers": brokers}),
        )?,
    }
    Ok(Exit::Ok)
}

/// "1 queue", "2 queues".
fn counted(n: f64, noun: &str) -> String {
    if n == 1.0 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The brokers that sampled the fleet's metrics in the last 5 minutes (`host:port`); `None`
/// when the token may not read them (the fleet's analytics are admin).
async fn brokers(ctx: &Ctx) -> Result<Option<Vec<String>>, Failure> {
    let from = (chrono::Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
    match ctx
        .client
        .get("/api/v1/analytics/system-metrics", &[("from", from)])
        .await
    {
        Ok(v) => Ok(Some(
            v["replicas"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| format!("{}:{}", r["hostname"].as_str().unwrap_or("?"), r["port"]))
                .collect(),
        )),
        Err(f) if f.exit == Exit::Auth => Ok(None),
        Err(f) => Err(f),
    }
}

pub async fn lag(ctx: &Ctx, min: u64) -> Outcome {
    let rows = ctx
        .client
        .get(
            "/api/v1/consumer-groups/lagging",
            &[("minLagSeconds", min.to_string())],
        )
        .await?;
    let rows = rows.as_array().cloned().unwrap_or_default();
    output::listed(
        ctx.format,
        &Listing {
            rows,
            columns: &[
                ("group", "consumer_group"),
                ("queue", "queue_name"),
                ("partition", "partition_name"),
                ("behind (s)", "time_lag_seconds"),
                ("messages", "offset_lag"),
                ("oldest unconsumed", "oldest_unconsumed_at"),
            ],
        },
    )
}

#[derive(Args, Debug)]
pub struct Replay {
    pub queue: String,
    /// The consumer group (`__QUEUE_MODE__` for the queue's own)
    #[arg(long = "cg", value_name = "GROUP")]
    pub group: String,
    /// Where to: '15m ago', 'now', an RFC 3339 instant, or 'end' (skip everything pending)
    #[arg(long)]
    pub to: String,
    /// One partition only (moved to its end: the broker seeks partitions to the end only)
    #[arg(long)]
    pub partition: Option<String>,
    #[command(flatten)]
    pub conn: Conn,
}

pub async fn replay(ctx: &Ctx, r: &Replay) -> Outcome {
    seek(ctx, &r.group, &r.queue, &r.to, r.partition.as_deref()).await
}

/// The broker's seek: a group's cursor on a queue (or one partition) to an instant or the end.
pub async fn seek(
    ctx: &Ctx,
    group: &str,
    queue: &str,
    to: &str,
    partition: Option<&str>,
) -> Outcome {
    let to_end = to.trim().eq_ignore_ascii_case("end");
    let base = format!(
        "/api/v1/consumer-groups/{}/queues/{}",
        seg(group),
        seg(queue)
    );
    let answer = match partition {
        Some(p) if to_end => {
            let path = format!("{base}/partitions/{}/seek", seg(p));
            ctx.client.post(&path, &json!({})).await?
        }
        Some(_) => {
            return Err(Failure::user(
                "a single partition can only be moved to its end: --to end",
            ))
        }
        None => {
            let body = if to_end {
                json!({"toEnd": true})
            } else {
                json!({"timestamp": when::instant(to, chrono::Utc::now())?})
            };
            ctx.client.post(&format!("{base}/seek"), &body).await?
        }
    };
    if answer.get("success") == Some(&Value::Bool(false)) {
        return Err(Failure::user(
            answer
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("the broker refused the seek")
                .to_string(),
        ));
    }
    output::document(ctx.format, &answer)?;
    // Nothing moved: the group has no cursor there yet. Said, not only coded: a group gets
    // its cursors at its first pop, which a replay cannot stand in for.
    if answer["updated"] == false || answer["partitionsUpdated"] == 0 {
        let place = match partition {
            Some(p) => format!("partition {p} of {queue}"),
            None => queue.to_string(),
        };
        eprintln!(
            "group \"{group}\" has no cursors on {place}: nothing moved (a group gets its \
             cursors at its first pop)"
        );
        return Ok(Exit::NoOp);
    }
    Ok(Exit::Ok)
}

#[derive(Subcommand, Debug)]
pub enum Maintenance {
    /// Show both switches
    Get,
    /// Turn maintenance on: pushes are buffered (with --pop: pops answer nothing)
    On {
        #[arg(long)]
        pop: bool,
    },
    /// Turn maintenance off
    Off {
        #[arg(long)]
        pop: bool,
    },
}

pub async fn maintenance(ctx: &Ctx, m: Maintenance) -> Outcome {
    let (pop, on) = match m {
        Maintenance::Get => {
            let v = ctx.client.get("/api/v1/system/maintenance", &[]).await?;
            output::document(ctx.format, &v)?;
            return Ok(Exit::Ok);
        }
        Maintenance::On { pop } => (pop, true),
        Maintenance::Off { pop } => (pop, false),
    };
    let path = if pop {
        "/api/v1/system/maintenance/pop"
    } else {
        "/api/v1/system/maintenance"
    };
    let v = ctx.client.post(path, &json!({"enabled": on})).await?;
    output::document(ctx.format, &v)?;
    Ok(Exit::Ok)
}
