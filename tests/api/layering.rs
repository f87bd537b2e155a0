//! The layering, enforced: each crate of the workspace may depend only on the crates beneath
//! it, and the layers that must do no I/O (or no SQL, or no HTTP) do not name the crates that
//! would let them. Rust only lets a crate use what its manifest declares, so checking the
//! manifests checks every import. ARCHITECTURE.md draws the same graph.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Each crate's direct dependencies (normal and build, not dev), by crate name.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().expect("name").to_string())
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_layers_beneath_it() {
    let deps = dependencies();
    // Which of the workspace's own crates each may use.
    let allowed: &[(&str, &[&str])] = &[
        ("regent-rules", &[]),
        ("regent-tls", &[]),
        ("regent-private-pg", &[]),
        ("regent-bench", &[]),
        // The operator's command line is a client of the HTTP API like any other.
        ("regent-ctl", &[]),
        ("regent-config", &["regent-rules"]),
        ("regent-store", &["regent-tls"]),
        ("regent-memory", &["regent-rules"]),
        (
            "regent-service",
            &[
                "regent-rules",
                "regent-store",
                "regent-memory",
                "regent-config",
            ],
        ),
        (
            "regent-http",
            &["regent-rules", "regent-config", "regent-service"],
        ),
        // The fuzzer calls the parsers, which only regent-http holds.
        ("regent-fuzz", &["regent-http"]),
    ];
    let ours: BTreeSet<&str> = deps.keys().map(String::as_str).collect();
    for (krate, may) in allowed {
        let uses: BTreeSet<&str> = deps[*krate]
            .iter()
            .map(String::as_str)
            .filter(|d| ours.contains(d))
            .collect();
        let may: BTreeSet<&str> = may.iter().copied().collect();
        assert!(
            uses.is_subset(&may),
            "{krate} uses {uses:?}; it may use only {may:?}"
        );
    }
    assert_eq!(
        ours.len(),
        allowed.len() + 1,
        "a new crate needs its place in this table (and in ARCHITECTURE.md): {ours:?}"
    );
}

#[test]
fn each_layer_names_none_of_the_crates_it_must_not_use() {
    let deps = dependencies();
    let forbidden: &[(&str, &[&str], &str)] = &[
        (
            "regent-ctl",
            &["tokio-postgres", "deadpool-postgres", "axum", "hyper"],
            "the command line talks to brokers over their HTTP API, never SQL",
        ),
        (
            "regent-rules",
            &[
                "tokio",
                "tokio-postgres",
                "deadpool-postgres",
                "axum",
                "reqwest",
                "hyper",
            ],
            "the rules do no I/O",
        ),
        (
            "regent-memory",
            &[
                "tokio-postgres",
                "deadpool-postgres",
                "axum",
                "reqwest",
                "hyper",
            ],
            "the runtime state does no I/O",
        ),
        (
            "regent-store",
            &["axum", "hyper", "reqwest", "regent-rules"],
            "the store knows SQL, not HTTP, and applies no rule",
        ),
        (
            "regent-service",
            &["axum", "hyper", "tower-http", "reqwest"],
            "the use cases know no HTTP",
        ),
        (
            "regent-http",
            &[
                "tokio-postgres",
                "deadpool-postgres",
                "refinery",
                "regent-store",
                "regent-memory",
            ],
            "HTTP reaches the database only through a use case",
        ),
        (
            "regent-bench",
            &[
                "regent-service",
                "regent-store",
                "regent-http",
                "regent-memory",
            ],
            "the load generator talks to a broker over HTTP only",
        ),
    ];
    for (krate, never, why) in forbidden {
        for dep in *never {
            assert!(
                !deps[*krate].contains(*dep),
                "{krate} depends on {dep}: {why}"
            );
        }
    }
}

/// What `regent-service` hands out of the layers beneath it, by name: plain data the store
/// reads and the runtime counts (rows, counts, ids, outcomes), no connection, lock or
/// in-memory map. Every other type of `regent-store` and `regent-memory` stays behind the
/// service, so what `regent-http` can reach is this list (ARCHITECTURE.md, "Invariants": the
/// service's vocabulary). A name added here is a decision: say why in its commit.
const VOCABULARY: &[&str] = &[
    // Messages and their place in the log.
    "Message",
    "StoredMessage",
    "DeadMark",
    "Place",
    "Scope",
    // Queues, partitions and their counts; the tenant at a glance.
    "Overview",
    "Label",
    "Rollup",
    "PartitionSummary",
    "Leases",
    "DeadSummary",
    "DepthPoint",
    "Expired",
    "QueueRow",
    "QueueSummary",
    "PartitionStats",
    "QueueTotals",
    "Listing",
    "Cleared",
    "Depth",
    "Counts",
    "Filter",
    "QueueCounts",
    // Consumer groups and their cursors.
    "GroupOnQueue",
    "Lagging",
    "PartitionLag",
    "Deleted",
    "Moved",
    "Seek",
    "SeekTo",
    "Extended",
    // Dead letters.
    "DeadLetter",
    "Picked",
    "Selector",
    // Traces.
    "NamedTrace",
    "Trace",
    "TraceEvent",
    "TraceName",
    // Stream queries, their partitions and state, and their counters.
    "StreamQuery",
    "StreamPartition",
    "StoredState",
    "KvRow",
    "KvTotal",
    "StateFilter",
    "StreamTotal",
    // Timers as stored, a tenant's queues with pending timers, and the timers' counters.
    "StoredTimer",
    "QueueTimers",
    "TimerTotal",
    "LATENESS_BUCKETS_MS",
    // Ephemeral queues: a depth read's partitions and groups, and the per-tenant counters.
    "PartitionDepth",
    "GroupDepth",
    "EphemeralTotal",
    // The fleet's samples and PostgreSQL's statistics.
    "SystemPoint",
    "FleetPoint",
    "Recent",
    "QueueActivity",
    "ParkedPoint",
    "PgStats",
    // This broker's counters, and a tenant's refusal.
    "Activity",
    "Op",
    "Outcome",
    "ProcessUse",
    "Recheck",
    "Snapshot",
    "Refusal",
    "Waiter",
    "PoolStatus",
];

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.push((path.display().to_string(), text));
        }
    }
    out
}

/// The names a file takes from the crates beneath the service: `use regent_store::a::{B, C}`
/// gives `B` and `C` (and `a` for paths through it).
fn lower_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        let Some(rest) = stmt
            .strip_prefix("use ")
            .or_else(|| stmt.strip_prefix("pub use "))
            .or_else(|| stmt.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        if !(rest.starts_with("regent_store") || rest.starts_with("regent_memory")) {
            continue;
        }
        for word in rest.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !word.is_empty() && word != "regent_store" && word != "regent_memory" {
                names.insert(word.to_string());
            }
        }
    }
    names
}

/// The items of `text` that the crate shows outside: `pub fn` signatures (up to their body),
/// `pub use`s, and the fields of `pub struct`s, unless only built for the tests
/// (`#[cfg(feature = "test-support")]`).
fn public_items(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_pub_struct = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let gated = i > 0 && lines[i - 1].contains("feature = \"test-support\"");
        if lines[i].starts_with("pub struct ") && lines[i].trim_end().ends_with('{') {
            in_pub_struct = true;
        } else if lines[i].starts_with('}') {
            in_pub_struct = false;
        }
        let field = in_pub_struct && line.starts_with("pub ") && line.contains(": ");
        let start = line.starts_with("pub fn ")
            || line.starts_with("pub async fn ")
            || line.starts_with("pub use ");
        if (start || field) && !gated {
            let mut item = String::new();
            while i < lines.len() {
                item.push_str(lines[i]);
                item.push(' ');
                let end = lines[i].trim_end();
                let done = if field {
                    end.ends_with(',')
                } else {
                    end.ends_with('{') || end.ends_with(';')
                };
                if done {
                    break;
                }
                i += 1;
            }
            out.push(item);
        }
        i += 1;
    }
    out
}

/// The type names an item takes through a path of a lower crate (`regent_memory::a::B`).
fn through_paths(item: &str) -> Vec<String> {
    let mut out = Vec::new();
    for krate in ["regent_store::", "regent_memory::"] {
        for (at, _) in item.match_indices(krate) {
            let path: String = item[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            if let Some(last) = path.rsplit("::").next() {
                out.push(last.to_string());
            }
        }
    }
    out
}

/// The use cases hand out their own types and the deliberate vocabulary above, nothing
/// else of the layers beneath: no public method, field or re-export of `regent-service`
/// names another type of `regent-store` or `regent-memory` (`Service::runtime()` handed
/// http the whole runtime until this test).
#[test]
fn the_service_hands_out_only_its_vocabulary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/service/src");
    let mut leaks = Vec::new();
    for (path, text) in sources(&root) {
        let lower = lower_names(&text);
        for item in public_items(&text) {
            let mut named: BTreeSet<String> = item
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with(char::is_uppercase) && lower.contains(*w))
                .map(str::to_string)
                .collect();
            named.extend(through_paths(&item));
            named
                .retain(|w| w.starts_with(char::is_uppercase) && !VOCABULARY.contains(&w.as_str()));
            if !named.is_empty() {
                leaks.push(format!("{path}: {} names {named:?}", item.trim()));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "public items of regent-service that hand out a lower layer:\n{}",
        leaks.join("\n")
    );
}

/// The service asks the store what it can do (`one_statement_paths`), never which layout it
/// is on: a branch on `Layout` in a use case is the Citus difference leaking out of the one
/// layer that holds it (docs/design/citus.md).
#[test]
fn the_service_never_branches_on_the_stores_layout() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/service/src");
    let branches: Vec<String> = sources(&root)
        .into_iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.contains("Layout"))
                .map(|(i, l)| format!("{path}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(branches.is_empty(), "{branches:#?}");
}
