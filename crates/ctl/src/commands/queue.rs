//! `queue list|describe|configure|delete|clear`.

use clap::Subcommand;
use serde_json::{json, Map, Value};

use super::{seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Format, Listing};

#[derive(Subcommand, Debug)]
pub enum QueueCommand {
    /// Every queue, newest first
    List {
        /// Only queues whose name contains this
        #[arg(long)]
        search: Option<String>,
    },
    /// One queue: its partitions and their counts
    Describe { queue: String },
    /// Create a queue or change its options (POST /api/v1/configure)
    Configure {
        queue: String,
        /// An option, KEY=VALUE (repeat): leaseTime=60, retryLimit=3, … (docs/api.md lists
        /// them); VALUE is read as JSON when it parses, else as a string
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        #[arg(long)]
        namespace: Option<String>,
        #[arg(long)]
        task: Option<String>,
    },
    /// Delete a queue with its messages, cursors and dead letters (admin)
    Delete {
        queue: String,
        /// Required: deleting cannot be undone
        #[arg(long)]
        yes: bool,
    },
    /// Delete a queue's messages (or one partition's), keeping the queue (admin)
    Clear {
        queue: String,
        #[arg(long)]
        partition: Option<String>,
        /// Required: clearing cannot be undone
        #[arg(long)]
        yes: bool,
    },
}

/// A queue as a row of `queue list` and `status`.
pub const QUEUE_COLUMNS: &[(&str, &str)] = &[
    ("queue", "name"),
    ("partitions", "partitions"),
    ("total", "messages.total"),
    // The broker's `pending` is every message after the cursor, leased ones included (as
    // Queen's): the column says so.
    ("pending", "messages.pending"),
    ("of which processing", "messages.processing"),
    ("namespace", "namespace"),
    ("task", "task"),
];

pub async fn run(ctx: &Ctx, command: QueueCommand) -> Outcome {
    match command {
        QueueCommand::List { search } => {
            let query: Vec<(&str, String)> = search.map(|s| ("search", s)).into_iter().collect();
            let v = ctx.client.get("/api/v1/resources/queues", &query).await?;
            let rows = v
                .get("queues")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            output::listing(
                ctx.format,
                &Listing {
                    rows,
                    columns: QUEUE_COLUMNS,
                },
            )?;
        }
        QueueCommand::Describe { queue } => {
            let path = format!("/api/v1/resources/queues/{}", seg(&queue));
            let v = ctx.client.get(&path, &[]).await?;
            describe(ctx.format, &v)?;
        }
        QueueCommand::Configure {
            queue,
            set,
            namespace,
            task,
        } => {
            let mut body = json!({"queue": queue, "options": options(&set)?});
            if let Some(n) = namespace {
                body["namespace"] = n.into();
            }
            if let Some(t) = task {
                body["task"] = t.into();
            }
            let v = ctx.client.post("/api/v1/configure", &body).await?;
            output::document(ctx.format, &v)?;
        }
        QueueCommand::Delete { queue, yes } => {
            confirmed(yes, &format!("delete queue \"{queue}\""))?;
            let path = format!("/api/v1/resources/queues/{}", seg(&queue));
            let v = ctx.client.delete(&path, &[]).await?;
            output::document(ctx.format, &v)?;
            if v.get("existed") == Some(&Value::Bool(false)) {
                return Ok(Exit::NoOp);
            }
        }
        QueueCommand::Clear {
            queue,
            partition,
            yes,
        } => {
            confirmed(yes, &format!("clear queue \"{queue}\""))?;
            let path = format!("/api/v1/queues/{}/clear", seg(&queue));
            let query: Vec<(&str, String)> =
                partition.map(|p| ("partition", p)).into_iter().collect();
            let v = ctx.client.delete(&path, &query).await?;
            output::document(ctx.format, &v)?;
        }
    }
    Ok(Exit::Ok)
}

/// A queue's partitions as a table, or the broker's answer as it is.
fn describe(format: Format, v: &Value) -> Result<(), Failure> {
    if format != Format::Table {
        return output::document(format, v);
    }
    let rows = v["partitions"].as_array().cloned().unwrap_or_default();
    // The header sums the rows below it (counted now), so the two never disagree; a page of
    // a larger queue says it is one.
    let sum = |k: &str| -> i64 { rows.iter().filter_map(|r| r["stats"][k].as_i64()).sum() };
    let all = v["pagination"]["total"]
        .as_u64()
        .unwrap_or(rows.len() as u64);
    let page = if all > rows.len() as u64 {
        format!(" on the first {} of {all} partitions", rows.len())
    } else {
        String::new()
    };
    output::line(&format!(
        "queue {} (namespace {}, task {}), created {}; {} messages, {} pending ({} of them \
         processing){page}",
        v["name"],
        v["namespace"],
        v["task"],
        v["createdAt"],
        sum("total"),
        sum("pending"),
        sum("processing"),
    ))?;
    output::listing(
        format,
        &Listing {
            rows,
            columns: &[
                ("partition", "name"),
                ("total", "stats.total"),
                ("pending", "stats.pending"),
                ("of which processing", "stats.processing"),
                ("completed", "stats.completed"),
                ("dead letters", "stats.deadLetter"),
                ("oldest", "oldestMessage"),
                ("newest", "newestMessage"),
            ],
        },
    )
}

/// `KEY=VALUE` pairs as the options object.
fn options(pairs: &[String]) -> Result<Value, Failure> {
    let mut m = Map::new();
    for pair in pairs {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| Failure::user(format!("--set {pair}: write KEY=VALUE")))?;
        let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
        m.insert(k.trim().to_string(), value);
    }
    Ok(Value::Object(m))
}

/// What cannot be undone is done only with `--yes`.
pub fn confirmed(yes: bool, what: &str) -> Result<(), Failure> {
    if yes {
        Ok(())
    } else {
        Err(Failure::user(format!(
            "this would {what}, which cannot be undone: add --yes"
        )))
    }
}
