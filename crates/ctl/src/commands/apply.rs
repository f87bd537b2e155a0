//! `apply -f queues.yaml`: queue configurations kept as files. Shows what would change
//! against the broker, then changes it; a second apply of the same files changes nothing.
//!
//! The file names queues and, for each, the options it sets: the keys it names are made so,
//! the keys it does not name keep the broker's value (the broker's configure replaces a
//! queue's options whole, so the command sends the broker's options overlaid with the file's).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::queue::confirmed;
use super::{seg, Ctx};
use crate::exit::{Exit, Failure, Outcome};
use crate::output;
use crate::Conn;

#[derive(Args, Debug)]
pub struct Apply {
    /// A YAML (or JSON) file of queues (repeat for several)
    #[arg(short = 'f', long = "filename", required = true)]
    pub files: Vec<PathBuf>,
    /// Also delete the broker's queues that no file names (needs --yes)
    #[arg(long)]
    pub prune: bool,
    /// Required with --prune: deleting a queue cannot be undone
    #[arg(long)]
    pub yes: bool,
    /// Show what would change, and change nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub conn: Conn,
}

/// A file: `queues:` mapping each name to its spec.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    queues: BTreeMap<String, Spec>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct Spec {
    namespace: Option<String>,
    task: Option<String>,
    #[serde(default)]
    options: Map<String, Value>,
}

/// What applying one queue does.
enum Change {
    Create(Spec),
    /// The configure body to send, and the differences it makes (as text).
    Update(Value, Vec<String>),
    Delete,
}

pub async fn apply(ctx: &Ctx, a: &Apply) -> Outcome {
    let wanted = read(&a.files)?;
    let mut plan: Vec<(String, Change)> = Vec::new();
    for (name, spec) in &wanted {
        let path = format!("/api/v1/status/queues/{}", seg(name));
        match ctx.client.get(&path, &[]).await {
            Ok(now) => {
                if let Some(change) = update(name, spec, &now["queue"]) {
                    plan.push((name.clone(), change));
                }
            }
            Err(f) if f.status == Some(404) => {
                plan.push((name.clone(), Change::Create(spec.clone())))
            }
            Err(f) => return Err(f),
        }
    }
    if a.prune {
        for name in broker_queues(ctx).await? {
            if !wanted.contains_key(&name) {
                plan.push((name, Change::Delete));
            }
        }
    }
    for (name, change) in &plan {
        match change {
            Change::Create(_) => eprintln!("+ queue {name}: created"),
            Change::Update(_, diffs) => {
                for d in diffs {
                    eprintln!("~ queue {name}: {d}");
                }
            }
            Change::Delete => eprintln!("- queue {name}: deleted (pruned)"),
        }
    }
    if plan.is_empty() {
        eprintln!("nothing to change: the broker matches the files");
        return Ok(Exit::NoOp);
    }
    if a.dry_run {
        eprintln!("dry run: nothing changed");
        return Ok(Exit::Ok);
    }
    if plan.iter().any(|(_, c)| matches!(c, Change::Delete)) {
        confirmed(a.yes, "delete the queues marked -")?;
    }
    let mut done = Vec::new();
    for (name, change) in plan {
        let answer = match change {
            Change::Create(spec) => {
                let mut body = json!({"queue": name, "options": spec.options});
                if let Some(n) = spec.namespace {
                    body["namespace"] = n.into();
                }
                if let Some(t) = spec.task {
                    body["task"] = t.into();
                }
                ctx.client.post("/api/v1/configure", &body).await?
            }
            Change::Update(body, _) => ctx.client.post("/api/v1/configure", &body).await?,
            Change::Delete => {
                let path = format!("/api/v1/resources/queues/{}", seg(&name));
                ctx.client.delete(&path, &[]).await?
            }
        };
        done.push(json!({"queue": name, "answer": answer}));
    }
    if ctx.format != output::Format::Table {
        output::document(ctx.format, &Value::Array(done))?;
    }
    Ok(Exit::Ok)
}

/// Every file's queues; a queue named in two files is a mistake.
fn read(files: &[PathBuf]) -> Result<BTreeMap<String, Spec>, Failure> {
    let mut all = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure::user(format!("{}: {e}", f.display())))?;
        let file: File = yaml_serde::from_str(&text)
            .map_err(|e| Failure::user(format!("{}: {e}", f.display())))?;
        for (name, spec) in file.queues {
            if all.insert(name.clone(), spec).is_some() {
                return Err(Failure::user(format!(
                    "{}: queue \"{name}\" is named by another file too",
                    f.display()
                )));
            }
        }
    }
    Ok(all)
}

/// The configure body that makes the broker's queue `now` match `spec`, if anything differs.
fn update(name: &str, spec: &Spec, now: &Value) -> Option<Change> {
    let mut diffs = Vec::new();
    let mut options = now["options"].as_object().cloned().unwrap_or_default();
    for (k, want) in &spec.options {
        let have = options.get(k).cloned().unwrap_or(Value::Null);
        if !same(&have, want) {
            diffs.push(format!("{k} {have} -> {want}"));
            options.insert(k.clone(), want.clone());
        }
    }
    let mut body = json!({"queue": name, "options": options});
    for key in ["namespace", "task"] {
        let have = now[key].as_str().unwrap_or("").to_string();
        let want = match key {
            "namespace" => spec.namespace.clone(),
            _ => spec.task.clone(),
        };
        let value = match want {
            Some(w) if w != have => {
                diffs.push(format!("{key} \"{have}\" -> \"{w}\""));
                w
            }
            _ => have,
        };
        body[key] = value.into();
    }
    (!diffs.is_empty()).then_some(Change::Update(body, diffs))
}

/// Equal as the broker means them: 60 and 60.0 are one number.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Every queue name of the broker (the token's tenant), page by page.
async fn broker_queues(ctx: &Ctx) -> Result<Vec<String>, Failure> {
    let mut names = Vec::new();
    loop {
        let query = [
            ("limit", "1000".to_string()),
            ("offset", names.len().to_string()),
        ];
        let v = ctx.client.get("/api/v1/resources/queues", &query).await?;
        let page: Vec<String> = v["queues"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| q["name"].as_str().map(str::to_string))
            .collect();
        let last = page.len() < 1000;
        names.extend(page);
        if last {
            return Ok(names);
        }
    }
}
