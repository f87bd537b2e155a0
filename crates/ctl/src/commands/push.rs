//! `push QUEUE < file.ndjson`: a stream of lines, pushed in batches one after another (so each
//! partition receives the lines in the order given), every line accounted for.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::Ctx;
use crate::exit::{Exit, Failure, Outcome};
use crate::output::Progress;
use crate::Conn;

#[derive(Args, Debug)]
pub struct Push {
    pub queue: String,
    /// The partition of every line [default: Default]
    #[arg(long, conflicts_with = "partition_key")]
    pub partition: Option<String>,
    /// The partition of each line: the value of this field of its payload
    #[arg(long, value_name = "FIELD")]
    pub partition_key: Option<String>,
    /// Lines per request
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,
    /// Read this file instead of stdin
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// Each line is a push item ({"payload", "partition", "transactionId", "traceId"}), not a
    /// payload
    #[arg(long)]
    pub envelope: bool,
    #[command(flatten)]
    pub conn: Conn,
}

/// What became of the lines.
#[derive(Default)]
struct Tally {
    lines: u64,
    queued: u64,
    duplicates: u64,
    failed: u64,
}

/// A line made into a push item, with its line number.
struct Line {
    number: u64,
    item: Value,
}

pub async fn push(ctx: &Ctx, p: &Push) -> Outcome {
    let reader: Box<dyn tokio::io::AsyncRead + Unpin> = match &p.file {
        Some(f) => Box::new(
            tokio::fs::File::open(f)
                .await
                .map_err(|e| Failure::user(format!("{}: {e}", f.display())))?,
        ),
        None => Box::new(tokio::io::stdin()),
    };
    let mut lines = BufReader::new(reader).lines();
    let mut tally = Tally::default();
    let mut batch = Vec::with_capacity(p.batch as usize);
    let progress = Progress::new();
    let mut number = 0;
    while let Some(text) = lines.next_line().await? {
        number += 1;
        if text.trim().is_empty() {
            continue;
        }
        tally.lines += 1;
        match item(p, &text) {
            Ok(item) => batch.push(Line { number, item }),
            Err(why) => {
                tally.failed += 1;
                eprintln!("line {number}: {why}");
            }
        }
        if batch.len() == p.batch as usize {
            send(ctx, &mut batch, &mut tally).await?;
            progress.show(&format!("{} lines pushed", tally.queued + tally.duplicates));
        }
    }
    send(ctx, &mut batch, &mut tally).await?;
    progress.done();
    eprintln!(
        "{} lines: {} pushed to {}, {} duplicates, {} failed",
        tally.lines, tally.queued, p.queue, tally.duplicates, tally.failed
    );
    if tally.failed > 0 {
        return Err(Failure::user(format!(
            "{} lines were not pushed",
            tally.failed
        )));
    }
    Ok(if tally.lines == 0 {
        Exit::NoOp
    } else {
        Exit::Ok
    })
}

/// One line as a push item: its payload, its partition, and a transaction id minted here, so
/// that a request retried after a lost answer is deduplicated by the broker.
fn item(p: &Push, text: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let (payload, mut item) = if p.envelope {
        let Value::Object(mut m) = v else {
            return Err("with --envelope each line is an object".into());
        };
        let payload = m.remove("payload").unwrap_or(json!({}));
        m.remove("queue");
        (payload, Value::Object(m))
    } else {
        (v, json!({}))
    };
    let partition = match (&p.partition, &p.partition_key) {
        (Some(name), _) => Some(name.clone()),
        (None, Some(field)) => Some(match payload.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(format!(
                    "no string or number field \"{field}\" in the payload"
                ))
            }
        }),
        (None, None) => None,
    };
    item["queue"] = p.queue.clone().into();
    item["payload"] = payload;
    if let Some(name) = partition {
        item["partition"] = name.into();
    }
    if item.get("transactionId").is_none() {
        item["transactionId"] = uuid::Uuid::now_v7().to_string().into();
    }
    Ok(item)
}

/// Pushes a batch. A request the broker refuses whole (a 400: one bad item refuses all of
/// them) is sent again line by line, so each bad line is named and the good ones arrive.
async fn send(ctx: &Ctx, batch: &mut Vec<Line>, tally: &mut Tally) -> Result<(), Failure> {
    if batch.is_empty() {
        return Ok(());
    }
    let lines = std::mem::take(batch);
    match request(ctx, &lines).await {
        Err(f) if f.exit == Exit::User && lines.len() > 1 => {
            for line in lines {
                match request(ctx, std::slice::from_ref(&line)).await {
                    Ok(answers) => count(&[line], &answers, tally),
                    Err(f) if f.exit == Exit::User => {
                        tally.failed += 1;
                        eprintln!("line {}: {}", line.number, f.message);
                    }
                    Err(f) => return Err(f),
                }
            }
            Ok(())
        }
        Err(f) if f.exit == Exit::User => {
            tally.failed += lines.len() as u64;
            eprintln!("line {}: {}", lines[0].number, f.message);
            Ok(())
        }
        Err(f) => Err(f),
        Ok(answers) => {
            count(&lines, &answers, tally);
            Ok(())
        }
    }
}

async fn request(ctx: &Ctx, lines: &[Line]) -> Result<Vec<Value>, Failure> {
    let items: Vec<&Value> = lines.iter().map(|l| &l.item).collect();
    let answer = ctx
        .client
        .post("/api/v1/push", &json!({ "items": items }))
        .await?;
    match answer {
        Value::Array(a) if a.len() == lines.len() => Ok(a),
        other => Err(Failure::unreachable(format!(
            "the broker answered a push of {} items with {}",
            lines.len(),
            other.to_string().chars().take(200).collect::<String>()
        ))),
    }
}

/// Each item's status, in order: anything not stored is reported with its line.
fn count(lines: &[Line], answers: &[Value], tally: &mut Tally) {
    for (line, a) in lines.iter().zip(answers) {
        match a.get("status").and_then(Value::as_str) {
            Some("queued") | Some("buffered") => tally.queued += 1,
            Some("duplicate") => tally.duplicates += 1,
            _ => {
                tally.failed += 1;
                let why = a
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("not stored");
                eprintln!("line {}: {why}", line.number);
            }
        }
    }
}
