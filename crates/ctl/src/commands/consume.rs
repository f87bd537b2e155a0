//! `tail`, `pop` and `ack`: reading a queue as a consumer does.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, BufReader};

use super::{seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Listing};
use crate::{when, Conn};

/// How long one long poll of `tail --follow` and `pop --wait` waits.
const LONG_POLL: Duration = Duration::from_secs(30);

#[derive(Args, Debug)]
pub struct Tail {
    pub queue: String,
    /// Read as this consumer group, committing as it goes [default: a group of the tail's own,
    /// deleted when it ends]
    #[arg(long = "cg", value_name = "GROUP")]
    pub group: Option<String>,
    /// One partition only
    #[arg(long)]
    pub partition: Option<String>,
    /// Keep waiting for new messages until interrupted
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Start at this instant ('15m ago', an RFC 3339 instant) when the group is new
    #[arg(long, conflicts_with = "from_beginning")]
    pub from: Option<String>,
    /// Start at the first message when the group is new (the default for the tail's own
    /// group)
    #[arg(long)]
    pub from_beginning: bool,
    /// Stop after this many messages
    #[arg(long)]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub conn: Conn,
}

/// Tail: pops with `autoAck` (a reader takes no lease), one NDJSON line per message, until
/// the queue has nothing more (or, with `--follow`, until interrupted).
pub async fn tail(ctx: &Ctx, t: &Tail) -> Outcome {
    let own = t.group.is_none();
    let group = t
        .group
        .clone()
        .unwrap_or_else(|| format!("regent-tail-{}", uuid::Uuid::new_v4().simple()));
    let mut query = vec![
        ("consumerGroup", group.clone()),
        ("autoAck", "true".into()),
        ("batch", "100".into()),
    ];
    if let Some(from) = &t.from {
        query.push(("subscriptionFrom", when::instant(from, chrono::Utc::now())?));
    } else if t.from_beginning || own {
        query.push(("subscriptionMode", "all".into()));
    }
    let path = pop_path(&t.queue, t.partition.as_deref());
    let mut printed = 0u64;
    let outcome = tokio::select! {
        r = read_all(ctx, &path, &query, t, &mut printed) => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
    };
    if own {
        forget(ctx, &group).await;
    }
    outcome?;
    if printed == 0 {
        exists(ctx, &t.queue).await?;
        return Ok(Exit::NoOp);
    }
    Ok(Exit::Ok)
}

/// A queue that does not exist is the user's mistake (a typo), said so; an empty one is
/// nothing to do. A pop answers both alike, so the queue is looked up.
async fn exists(ctx: &Ctx, queue: &str) -> Result<(), Failure> {
    let path = format!("/api/v1/resources/queues/{}", seg(queue));
    match ctx.client.get(&path, &[]).await {
        Err(f) if f.status == Some(404) => {
            Err(Failure::user(format!("queue \"{queue}\" does not exist")))
        }
        other => other.map(drop),
    }
}

async fn read_all(
    ctx: &Ctx,
    path: &str,
    query: &[(&str, String)],
    t: &Tail,
    printed: &mut u64,
) -> Result<(), Failure> {
    loop {
        let mut q = query.to_vec();
        if t.follow {
            q.push(("wait", "true".into()));
            q.push(("timeout", LONG_POLL.as_millis().to_string()));
        } else {
            q.push(("wait", "false".into()));
        }
        let answer = ctx.client.get_long(path, &q, LONG_POLL).await?;
        let messages = messages(&answer, &t.queue);
        if messages.is_empty() && !t.follow {
            return Ok(());
        }
        for m in messages {
            output::line(&m.to_string())?;
            *printed += 1;
            if t.limit.is_some_and(|l| *printed >= l) {
                return Ok(());
            }
        }
    }
}

/// A tail's own group is removed when the tail ends, so that it neither lingers as a
/// lagging group nor keeps cursors. Deleting a group needs the admin role; without it the
/// group stays, and the tail says so.
async fn forget(ctx: &Ctx, group: &str) {
    let path = format!("/api/v1/consumer-groups/{}", seg(group));
    if let Err(f) = ctx.client.delete(&path, &[]).await {
        eprintln!("note: the tail's group \"{group}\" was left on the broker ({f})");
    }
}

fn pop_path(queue: &str, partition: Option<&str>) -> String {
    match partition {
        Some(p) => format!("/api/v1/pop/queue/{}/partition/{}", seg(queue), seg(p)),
        None => format!("/api/v1/pop/queue/{}", seg(queue)),
    }
}

/// A pop answer's messages, each with its queue named (the answer names it once).
fn messages(answer: &Value, queue: &str) -> Vec<Value> {
    let mut out = answer
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for m in &mut out {
        if let Value::Object(o) = m {
            o.entry("queue").or_insert_with(|| queue.into());
        }
    }
    out
}

#[derive(Args, Debug)]
pub struct Pop {
    pub queue: String,
    #[arg(long = "cg", value_name = "GROUP")]
    pub group: Option<String>,
    #[arg(long)]
    pub partition: Option<String>,
    /// At most this many messages
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Wait up to 30 s for a message
    #[arg(long)]
    pub wait: bool,
    /// Commit at delivery, with no lease (at most once)
    #[arg(long)]
    pub auto_ack: bool,
    #[command(flatten)]
    pub conn: Conn,
}

const MESSAGE_COLUMNS: &[(&str, &str)] = &[
    ("partition", "partition"),
    ("transaction id", "transactionId"),
    ("lease", "leaseId"),
    ("created", "createdAt"),
    ("data", "data"),
];

pub async fn pop(ctx: &Ctx, p: &Pop) -> Outcome {
    let mut query = vec![
        ("batch", p.batch.to_string()),
        ("wait", p.wait.to_string()),
        ("timeout", LONG_POLL.as_millis().to_string()),
    ];
    if let Some(g) = &p.group {
        query.push(("consumerGroup", g.clone()));
    }
    if p.auto_ack {
        query.push(("autoAck", "true".into()));
    }
    let path = pop_path(&p.queue, p.partition.as_deref());
    let answer = ctx.client.get_long(&path, &query, LONG_POLL).await?;
    let rows = messages(&answer, &p.queue);
    output::listed(
        ctx.format,
        &Listing {
            rows,
            columns: MESSAGE_COLUMNS,
        },
    )
}

#[derive(Args, Debug)]
pub struct Ack {
    /// Transaction ids to acknowledge (with --partition-id); without any, NDJSON messages
    /// are read from stdin (or --file), as `pop -o ndjson` prints them
    pub transaction_ids: Vec<String>,
    /// The partition (its id) of the transaction ids given
    #[arg(long)]
    pub partition_id: Option<String>,
    /// The lease they were popped under
    #[arg(long)]
    pub lease: Option<String>,
    #[arg(long = "cg", value_name = "GROUP")]
    pub group: Option<String>,
    /// Report them failed (retried, then dead-lettered) instead of completed
    #[arg(long)]
    pub failed: bool,
    /// Why they failed (kept with a dead letter)
    #[arg(long)]
    pub error: Option<String>,
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub conn: Conn,
}

pub async fn ack(ctx: &Ctx, a: &Ack) -> Outcome {
    let status = if a.failed { "failed" } else { "completed" };
    let mut items = Vec::new();
    let mut group = a.group.clone();
    if a.transaction_ids.is_empty() {
        for m in read_messages(a.file.as_ref()).await? {
            let field = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
            if group.is_none() {
                group = m
                    .get("consumerGroup")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            items.push(json!({
                "transactionId": field("transactionId"), "partitionId": field("partitionId"),
                "leaseId": a.lease.clone().map(Value::from).unwrap_or_else(|| field("leaseId")),
                "status": status, "error": a.error,
            }));
        }
    } else {
        let Some(pid) = &a.partition_id else {
            return Err(Failure::user(
                "--partition-id is required with transaction ids",
            ));
        };
        for tx in &a.transaction_ids {
            items.push(
                json!({"transactionId": tx, "partitionId": pid, "leaseId": a.lease,
                              "status": status, "error": a.error}),
            );
        }
    }
    if items.is_empty() {
        return Ok(Exit::NoOp);
    }
    let body = json!({"consumerGroup": group, "acknowledgments": items});
    let answer = ctx.client.post("/api/v1/ack/batch", &body).await?;
    let rows = answer.as_array().cloned().unwrap_or_default();
    let refused: Vec<&Value> = rows
        .iter()
        .filter(|r| r.get("success") != Some(&Value::Bool(true)))
        .collect();
    for r in &refused {
        eprintln!(
            "{}: {}",
            r["transactionId"].as_str().unwrap_or("?"),
            r["error"].as_str().unwrap_or("refused")
        );
    }
    output::listing(
        ctx.format,
        &Listing {
            rows: rows.clone(),
            columns: &[
                ("transaction id", "transactionId"),
                ("success", "success"),
                ("error", "error"),
                ("lease released", "leaseReleased"),
                ("dead letter", "dlq"),
                ("no-op", "noop"),
            ],
        },
    )?;
    if !refused.is_empty() {
        return Err(Failure::user(format!(
            "{} of {} acknowledgements refused",
            refused.len(),
            rows.len()
        )));
    }
    Ok(Exit::Ok)
}

/// NDJSON messages, or one JSON array of them (what `pop -o json` prints).
async fn read_messages(file: Option<&PathBuf>) -> Result<Vec<Value>, Failure> {
    let reader: Box<dyn tokio::io::AsyncRead + Unpin> = match file {
        Some(f) => Box::new(
            tokio::fs::File::open(f)
                .await
                .map_err(|e| Failure::user(format!("{}: {e}", f.display())))?,
        ),
        None => Box::new(tokio::io::stdin()),
    };
    let mut text = String::new();
    BufReader::new(reader).read_to_string(&mut text).await?;
    if let Ok(Value::Array(all)) = serde_json::from_str::<Value>(&text) {
        return Ok(all);
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|e| Failure::user(format!("line {}: {e}", n + 1)))
        })
        .collect()
}
