//! `kv`, `timers` and `stream`: inspecting what pipelines keep beside their queues.

use clap::Subcommand;
use serde_json::{json, Value};

use super::{seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output::{self, Listing};

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// One key's value, version and expiry; exits 4 when it has none
    Get { namespace: String, key: String },
    /// The keys starting with a prefix, in byte order
    List {
        namespace: String,
        #[arg(long)]
        prefix: String,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

pub async fn kv(ctx: &Ctx, command: KvCommand) -> Outcome {
    let op = match &command {
        KvCommand::Get { namespace, key } => json!({"op": "get", "ns": namespace, "key": key}),
        KvCommand::List {
            namespace,
            prefix,
            limit,
        } => json!({"op": "getPrefix", "ns": namespace, "prefix": prefix, "limit": limit}),
    };
    let answer = ctx
        .client
        .post("/api/v1/kv", &json!({ "operations": [op] }))
        .await?;
    let result = answer["results"][0].clone();
    match command {
        KvCommand::Get { .. } => {
            output::document(ctx.format, &result)?;
            Ok(if result["found"] == true {
                Exit::Ok
            } else {
                Exit::NoOp
            })
        }
        KvCommand::List { .. } => output::listed(
            ctx.format,
            &Listing {
                rows: result["rows"].as_array().cloned().unwrap_or_default(),
                columns: &[
                    ("key", "key"),
                    ("value", "value"),
                    ("version", "version"),
                    ("expires", "expiresAt"),
                    ("updated", "updatedAt"),
                ],
            },
        ),
    }
}

#[derive(Subcommand, Debug)]
pub enum TimersCommand {
    /// The queues with pending timers; with a queue, its pending timers by key
    List {
        queue: Option<String>,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// One pending timer, with its payload (base64 of the JSON document)
    Get { queue: String, key: String },
    /// Cancel one pending timer
    Cancel { queue: String, key: String },
}

/// A timer key in a path: it may hold `/`, which the route takes as part of the key.
fn key_path(queue: &str, key: &str) -> String {
    let key: Vec<String> = key.split('/').map(seg).collect();
    format!("/api/v1/timers/{}/{}", seg(queue), key.join("/"))
}

pub async fn timers(ctx: &Ctx, command: TimersCommand) -> Outcome {
    match command {
        TimersCommand::List { queue: None, .. } => {
            super::list_route(
                ctx,
                "/api/v1/timers",
                &[],
                Some("queues"),
                &[
                    ("queue", "queue"),
                    ("pending", "pending"),
                    ("next", "nextDeliverAt"),
                ],
            )
            .await
        }
        TimersCommand::List {
            queue: Some(q),
            limit,
        } => {
            let path = format!("/api/v1/timers/{}", seg(&q));
            super::list_route(
                ctx,
                &path,
                &[("limit", limit.to_string())],
                Some("rows"),
                &[
                    ("key", "timerKey"),
                    ("deliver at", "deliverAt"),
                    ("partition", "partition"),
                    ("transaction id", "txn"),
                    ("attempts", "attempts"),
                ],
            )
            .await
        }
        TimersCommand::Get { queue, key } => {
            let v = ctx.client.get(&key_path(&queue, &key), &[]).await?;
            output::document(ctx.format, &v)?;
            Ok(if v["found"] == true {
                Exit::Ok
            } else {
                Exit::NoOp
            })
        }
        TimersCommand::Cancel { queue, key } => {
            let v = ctx.client.delete(&key_path(&queue, &key), &[]).await?;
            let result = match &v["results"][0] {
                Value::Null => v.clone(),
                r => r.clone(),
            };
            output::document(ctx.format, &result)?;
            match result["status"].as_str() {
                Some("cancelled") => Ok(Exit::Ok),
                Some("absent") => Ok(Exit::NoOp),
                _ => Err(Failure::user(format!(
                    "not cancelled: {}",
                    result["status"].as_str().unwrap_or("no status")
                ))),
            }
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum StreamCommand {
    /// The stream queries registered
    List,
    /// A query's source partitions with their state rows and cycles, most recent first
    Partitions {
        /// The query's name or id
        query_id: String,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

pub async fn stream(ctx: &Ctx, command: StreamCommand) -> Outcome {
    match command {
        StreamCommand::List => {
            super::list_route(
                ctx,
                "/streams/v1/queries",
                &[],
                Some("queries"),
                &[
                    ("name", "name"),
                    ("id", "query_id"),
                    ("source", "source_queue"),
                    ("sink", "sink_queue"),
                    ("updated", "updated_at"),
                ],
            )
            .await
        }
        StreamCommand::Partitions { query_id, limit } => {
            let path = format!("/streams/v1/queries/{}/partitions", seg(&query_id));
            super::list_route(
                ctx,
                &path,
                &[("limit", limit.to_string())],
                Some("partitions"),
                &[
                    ("partition", "partition"),
                    ("state rows", "state_rows"),
                    ("cycles", "cycles"),
                    ("last cycle", "last_cycle_at"),
                ],
            )
            .await
        }
    }
}
