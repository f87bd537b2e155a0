//! `cg`, `dlq`, `messages`, `partition` and `traces`: the inspection and repair routes.

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::queue::confirmed;
use super::{basic, seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Listing, Progress};
use crate::when;

#[derive(Subcommand, Debug)]
pub enum GroupCommand {
    /// Every (group, queue) pair, with its lag
    List {
        #[arg(long)]
        queue: Option<String>,
    },
    /// One group's partitions on every queue it reads
    Describe { group: String },
    /// Move the group's cursor on a queue (as `replay`)
    Seek {
        group: String,
        #[arg(long)]
        queue: String,
        /// '15m ago', 'now', an RFC 3339 instant, or 'end'
        #[arg(long)]
        to: String,
    },
    /// Delete the group's cursors (on one queue, with --queue) and its subscription (admin)
    Delete {
        group: String,
        #[arg(long)]
        queue: Option<String>,
        /// Keep its subscription choice, so that it resumes from the same start
        #[arg(long)]
        keep_metadata: bool,
        #[arg(long)]
        yes: bool,
    },
}

pub async fn group(ctx: &Ctx, command: GroupCommand) -> Outcome {
    match command {
        GroupCommand::List { queue } => {
            let query: Vec<(&str, String)> = queue.map(|q| ("queue", q)).into_iter().collect();
            let v = ctx.client.get("/api/v1/consumer-groups", &query).await?;
            let rows = v.as_array().cloned().unwrap_or_default();
            output::listed(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("group", "name"),
                        ("queue", "queueName"),
                        ("partitions", "members"),
                        ("with lag", "partitionsWithLag"),
                        ("messages behind", "totalLag"),
                        ("behind (s)", "maxTimeLag"),
                        ("state", "state"),
                        ("mode", "subscriptionMode"),
                    ],
                },
            )
        }
        GroupCommand::Describe { group } => {
            let path = format!("/api/v1/consumer-groups/{}", seg(&group));
            let v = ctx.client.get(&path, &[]).await?;
            let mut rows = Vec::new();
            for (queue, detail) in v.as_object().into_iter().flatten() {
                for p in detail["partitions"].as_array().into_iter().flatten() {
                    let mut row = p.clone();
                    row["queue"] = queue.clone().into();
                    rows.push(row);
                }
            }
            if rows.is_empty() {
                return Err(Failure::user(format!("no consumer group \"{group}\"")));
            }
            output::listing(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("queue", "queue"),
                        ("partition", "partition"),
                        ("messages behind", "offsetLag"),
                        ("behind (s)", "timeLagSeconds"),
                        ("leased", "leaseActive"),
                        // The broker keeps no time of the last consumption (its
                        // `lastConsumedAt` is always null): the count it keeps instead.
                        ("consumed", "totalConsumed"),
                    ],
                },
            )?;
            Ok(Exit::Ok)
        }
        GroupCommand::Seek { group, queue, to } => {
            basic::seek(ctx, &group, &queue, &to, None).await
        }
        GroupCommand::Delete {
            group,
            queue,
            keep_metadata,
            yes,
        } => {
            confirmed(yes, &format!("delete consumer group \"{group}\""))?;
            let path = match &queue {
                Some(q) => format!("/api/v1/consumer-groups/{}/queues/{}", seg(&group), seg(q)),
                None => format!("/api/v1/consumer-groups/{}", seg(&group)),
            };
            let query = [("deleteMetadata", (!keep_metadata).to_string())];
            let v = ctx.client.delete(&path, &query).await?;
            output::document(ctx.format, &v)?;
            Ok(if v["deletedPartitions"] == 0 {
                Exit::NoOp
            } else {
                Exit::Ok
            })
        }
    }
}

/// Which dead letters: ids, or a filter, or `--all`.
#[derive(Args, Debug)]
pub struct Selection {
    /// A dead letter's id (repeat)
    #[arg(long = "id", value_name = "DEAD_LETTER_ID")]
    pub ids: Vec<String>,
    #[arg(long)]
    pub queue: Option<String>,
    #[arg(long)]
    pub partition: Option<String>,
    #[arg(long = "cg", value_name = "GROUP")]
    pub group: Option<String>,
    /// The stored error text, exactly
    #[arg(long)]
    pub reason: Option<String>,
    /// Failed at or after ('1h ago', an RFC 3339 instant)
    #[arg(long)]
    pub from: Option<String>,
    /// Failed at or before
    #[arg(long)]
    pub to: Option<String>,
    /// Every dead letter of the tenant
    #[arg(long)]
    pub all: bool,
    /// Say what would be done, and do nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Subcommand, Debug)]
pub enum DlqCommand {
    /// Dead letters, newest failure first
    List {
        #[arg(long)]
        queue: Option<String>,
        #[arg(long)]
        partition: Option<String>,
        #[arg(long = "cg", value_name = "GROUP")]
        group: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Push the selected dead letters back to their partitions as new messages
    Requeue(Selection),
    /// Delete the selected dead letters
    Delete(Selection),
}

pub async fn dlq(ctx: &Ctx, command: DlqCommand) -> Outcome {
    let (route, selection, done) = match command {
        DlqCommand::List {
            queue,
            partition,
            group,
            limit,
        } => {
            let mut query = vec![("limit", limit.to_string())];
            query.extend(queue.map(|q| ("queue", q)));
            query.extend(partition.map(|p| ("partition", p)));
            query.extend(group.map(|g| ("consumerGroup", g)));
            let v = ctx.client.get("/api/v1/dlq", &query).await?;
            let rows = v["messages"].as_array().cloned().unwrap_or_default();
            return output::listed(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("id", "deadLetterId"),
                        ("queue", "queue"),
                        ("partition", "partition"),
                        ("group", "consumerGroup"),
                        ("transaction id", "transactionId"),
                        ("error", "errorMessage"),
                        ("failed", "failedAt"),
                    ],
                },
            );
        }
        DlqCommand::Requeue(s) => ("/api/v1/dlq/requeue", s, "requeued"),
        DlqCommand::Delete(s) => ("/api/v1/dlq/delete", s, "deleted"),
    };
    let body = selection_body(&selection)?;
    // One call handles up to 10,000; the broker says when more matched. A dry run answers
    // for the first call's worth only (nothing changes, so the next call would say the same).
    let progress = Progress::new();
    let (mut items, mut matched, mut changed) = (Vec::new(), 0u64, 0u64);
    let mut answer;
    loop {
        answer = ctx.client.post(route, &body).await?;
        matched += answer["matched"].as_u64().unwrap_or(0);
        changed += answer[done].as_u64().unwrap_or(0);
        items.extend(answer["items"].as_array().cloned().unwrap_or_default());
        progress.show(&format!("{changed} {done}"));
        let more = answer["more"] == true;
        let moved = answer[done].as_u64().unwrap_or(0) > 0;
        if !more || !moved || selection.dry_run || !selection.ids.is_empty() {
            break;
        }
    }
    progress.done();
    answer["matched"] = matched.into();
    answer[done] = changed.into();
    answer["items"] = Value::Array(items.clone());
    match ctx.format {
        output::Format::Table => {
            let rows = match selection.dry_run {
                true => items.into_iter().map(would).collect(),
                false => items,
            };
            output::listing(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("id", "deadLetterId"),
                        ("transaction id", "transactionId"),
                        ("group", "consumerGroup"),
                        ("verdict", "verdict"),
                    ],
                },
            )?;
            if selection.dry_run {
                eprintln!(
                    "{matched} matched, {changed} would be {done} (dry run: nothing changed)"
                );
            } else {
                eprintln!("{matched} matched, {changed} {done}");
            }
        }
        f => output::document(f, &answer)?,
    }
    Ok(if matched == 0 { Exit::NoOp } else { Exit::Ok })
}

/// A dry run's item as the table shows it: what would be done, never that it was (the
/// broker's verdicts name the outcome; `-o json` keeps them, beside `dryRun: true`).
fn would(mut item: Value) -> Value {
    let verdict = match item["verdict"].as_str() {
        Some("requeued") => "would requeue",
        Some("deleted") => "would delete",
        Some("duplicate") => "would drop (a copy is there)",
        _ => return item,
    };
    item["verdict"] = verdict.into();
    item
}

fn selection_body(s: &Selection) -> Result<Value, Failure> {
    let mut body = json!({});
    if !s.ids.is_empty() {
        // Dead-letter ids are numbers on the wire.
        let ids: Result<Vec<i64>, _> = s.ids.iter().map(|i| i.trim().parse::<i64>()).collect();
        body["ids"] =
            json!(ids.map_err(|_| Failure::user("--id takes the numbers `dlq list` shows"))?);
    }
    for (key, v) in [
        ("queue", &s.queue),
        ("partition", &s.partition),
        ("consumerGroup", &s.group),
        ("reason", &s.reason),
    ] {
        if let Some(v) = v {
            body[key] = v.clone().into();
        }
    }
    let now = chrono::Utc::now();
    if let Some(t) = &s.from {
        body["from"] = when::instant(t, now)?.into();
    }
    if let Some(t) = &s.to {
        body["to"] = when::instant(t, now)?.into();
    }
    if s.all {
        body["all"] = true.into();
    }
    if body.as_object().is_some_and(|m| m.is_empty()) {
        return Err(Failure::user(
            "say which dead letters: --id, a filter (--queue, --cg, --partition, --reason, \
             --from, --to) or --all",
        ));
    }
    if s.dry_run {
        body["dryRun"] = true.into();
    }
    Ok(body)
}

#[derive(Subcommand, Debug)]
pub enum MessagesCommand {
    /// Messages of the last hour (or --from), newest first, without payloads
    List {
        #[arg(long)]
        queue: Option<String>,
        #[arg(long)]
        partition: Option<String>,
        /// pending, processing, completed or dead_letter
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        from: Option<String>,
        #[arg(long, default_value_t = 200)]
        limit: u32,
    },
    /// One message, with its payload and where each group is
    Get {
        partition_id: String,
        transaction_id: String,
    },
    /// Delete one message
    Delete {
        partition_id: String,
        transaction_id: String,
    },
    /// Make a message deliverable again for a group
    Retry {
        partition_id: String,
        transaction_id: String,
        #[arg(long = "cg", value_name = "GROUP")]
        group: Option<String>,
    },
    /// File a message as a dead letter of a group, and move the group past it
    Dlq {
        partition_id: String,
        transaction_id: String,
        #[arg(long = "cg", value_name = "GROUP")]
        group: Option<String>,
    },
}

pub async fn messages(ctx: &Ctx, command: MessagesCommand) -> Outcome {
    let one = |pid: &str, tx: &str| format!("/api/v1/messages/{}/{}", seg(pid), seg(tx));
    let group_query = |g: Option<String>| -> Vec<(&'static str, String)> {
        g.map(|g| ("consumerGroup", g)).into_iter().collect()
    };
    let v = match command {
        MessagesCommand::List {
            queue,
            partition,
            status,
            from,
            limit,
        } => {
            let mut query = vec![("limit", limit.to_string())];
            query.extend(queue.map(|q| ("queue", q)));
            query.extend(partition.map(|p| ("partition", p)));
            query.extend(status.map(|s| ("status", s)));
            if let Some(f) = from {
                query.push(("from", when::instant(&f, chrono::Utc::now())?));
            }
            let v = ctx.client.get("/api/v1/messages", &query).await?;
            let rows = v["messages"].as_array().cloned().unwrap_or_default();
            return output::listed(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("queue", "queue"),
                        ("partition", "partition"),
                        ("partition id", "partitionId"),
                        ("transaction id", "transactionId"),
                        ("status", "status"),
                        ("created", "createdAt"),
                    ],
                },
            );
        }
        MessagesCommand::Get {
            partition_id,
            transaction_id,
        } => {
            ctx.client
                .get(&one(&partition_id, &transaction_id), &[])
                .await?
        }
        MessagesCommand::Delete {
            partition_id,
            transaction_id,
        } => {
            ctx.client
                .delete(&one(&partition_id, &transaction_id), &[])
                .await?
        }
        MessagesCommand::Retry {
            partition_id,
            transaction_id,
            group,
        } => {
            let path = format!("{}/retry", one(&partition_id, &transaction_id));
            ctx.client.post_once(&path, &group_query(group)).await?
        }
        MessagesCommand::Dlq {
            partition_id,
            transaction_id,
            group,
        } => {
            let path = format!("{}/dlq", one(&partition_id, &transaction_id));
            ctx.client.post_once(&path, &group_query(group)).await?
        }
    };
    output::document(ctx.format, &v)?;
    Ok(if v["success"] == false {
        Exit::NoOp
    } else {
        Exit::Ok
    })
}

#[derive(Subcommand, Debug)]
pub enum PartitionCommand {
    /// A queue's partitions, by name
    List {
        queue: String,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// One partition's counts, oldest and newest message
    Describe { queue: String, partition: String },
    /// Move a group's cursor on one partition to its end, releasing its lease
    Seek {
        queue: String,
        partition: String,
        #[arg(long = "cg", value_name = "GROUP")]
        group: String,
    },
}

pub async fn partition(ctx: &Ctx, command: PartitionCommand) -> Outcome {
    match command {
        PartitionCommand::List { queue, limit } => {
            let query = [("queue", queue), ("limit", limit.to_string())];
            let v = ctx
                .client
                .get("/api/v1/resources/partitions", &query)
                .await?;
            let rows = v["partitions"].as_array().cloned().unwrap_or_default();
            output::listed(
                ctx.format,
                &Listing {
                    rows,
                    columns: &[
                        ("partition", "name"),
                        ("id", "id"),
                        ("total", "messages.total"),
                        ("pending", "messages.pending"),
                        ("last activity", "lastActivity"),
                    ],
                },
            )
        }
        PartitionCommand::Describe { queue, partition } => {
            let path = format!("/api/v1/resources/queues/{}", seg(&queue));
            let v = ctx.client.get(&path, &[]).await?;
            let found = v["partitions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == partition.as_str())
                .cloned()
                .ok_or_else(|| {
                    Failure::user(format!("no partition \"{partition}\" in queue \"{queue}\""))
                })?;
            output::document(ctx.format, &found)?;
            Ok(Exit::Ok)
        }
        PartitionCommand::Seek {
            queue,
            partition,
            group,
        } => basic::seek(ctx, &group, &queue, "end", Some(&partition)).await,
    }
}

#[derive(Subcommand, Debug)]
pub enum TracesCommand {
    /// Trace names, most recently seen first
    Names,
    /// A message's traces, oldest first
    Get {
        partition_id: String,
        transaction_id: String,
    },
    /// Traces carrying a name, newest first
    ByName {
        name: String,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

pub async fn traces(ctx: &Ctx, command: TracesCommand) -> Outcome {
    let (v, key) = match command {
        TracesCommand::Names => (ctx.client.get("/api/v1/traces/names", &[]).await?, "names"),
        TracesCommand::Get {
            partition_id,
            transaction_id,
        } => {
            let path = format!(
                "/api/v1/traces/{}/{}",
                seg(&partition_id),
                seg(&transaction_id)
            );
            (ctx.client.get(&path, &[]).await?, "traces")
        }
        TracesCommand::ByName { name, limit } => {
            let path = format!("/api/v1/traces/by-name/{}", seg(&name));
            let query = [("limit", limit.to_string())];
            (ctx.client.get(&path, &query).await?, "traces")
        }
    };
    let rows = match v.get(key) {
        Some(Value::Array(a)) => a.clone(),
        _ => v.as_array().cloned().unwrap_or_default(),
    };
    let none = rows.is_empty();
    if ctx.format == output::Format::Table {
        // Trace rows differ by route; a table shows each row's own fields.
        for row in &rows {
            output::document(ctx.format, row)?;
        }
    } else {
        output::document(ctx.format, &v)?;
    }
    Ok(if none { Exit::NoOp } else { Exit::Ok })
}
