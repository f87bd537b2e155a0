//! `GET /metrics` (Queen's JSON snapshot, what `Admin.metrics()` returns) and
//! `GET /metrics/prometheus` (the text exposition a scraper reads). Both are public and read
//! only this process: counters since start, the pool, memory and CPU. Nothing per tenant or
//! per queue, since anyone may call them; unless `METRICS_PER_QUEUE` adds the per-queue
//! families (`crate::queue_metrics`) to the exposition.

use std::fmt::Write;

use axum::http::{header, Method};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::answer::Answer;
use super::health;
use super::openapi::Doc;
use super::routes::{route, Entry, Level::Public};
use super::State;
use regent_service::health::Metrics;
use regent_service::{Op, Outcome, Recheck, Snapshot};

/// The text exposition's response in the document: no JSON, `Cache-Control: no-cache` (written
/// out: the typed responses of `openapi::object` are JSON's).
pub(crate) fn exposition_reply() -> serde_json::Value {
    json!({
        "description": "The exposition (`text/plain; version=0.0.4`), `Cache-Control: no-cache`.",
        "headers": { "x-request-id": { "$ref": "#/components/headers/RequestId" } },
        "content": { "text/plain; version=0.0.4; charset=utf-8": { "schema": { "type": "string" } } },
    })
}

pub(crate) fn routes() -> Vec<Entry> {
    vec![
        route(Method::GET, "/metrics", Public, json_snapshot)
            .reads_nothing()
            .doc(
                Doc::op(health::TAG, "Queen's JSON metrics snapshot")
                    .answers::<MetricsSnapshot>(200, "The snapshot."),
            ),
        route(Method::GET, "/metrics/prometheus", Public, prometheus)
            .reads_nothing()
            .doc(
                Doc::op(health::TAG, "Prometheus text exposition")
                    .reply_raw(200, exposition_reply()),
            ),
    ]
}

/// Queen's JSON metrics snapshot of this process.
#[derive(Serialize, JsonSchema)]
struct MetricsSnapshot {
    /// Seconds since this broker started.
    uptime: u64,
    requests: Rate,
    /// Messages pushed.
    messages: Rate,
    database: Pool,
    memory: Memory,
    cpu: Cpu,
}

#[derive(Serialize, JsonSchema)]
struct Rate {
    total: u64,
    /// Per second since start.
    rate: f64,
}

#[derive(Serialize, JsonSchema)]
struct Pool {
    #[serde(rename = "poolSize")]
    pool_size: usize,
    #[serde(rename = "idleConnections")]
    idle_connections: usize,
    #[serde(rename = "waitingRequests")]
    waiting_requests: usize,
}

/// Queen's Node.js figures; only `rss` means something here.
#[derive(Serialize, JsonSchema)]
struct Memory {
    /// Resident bytes.
    rss: u64,
    #[serde(rename = "heapTotal")]
    #[schemars(extend("const" = 0))]
    heap_total: u64,
    #[serde(rename = "heapUsed")]
    #[schemars(extend("const" = 0))]
    heap_used: u64,
    #[schemars(extend("const" = 0))]
    external: u64,
    #[serde(rename = "arrayBuffers")]
    #[schemars(extend("const" = 0))]
    array_buffers: u64,
}

#[derive(Serialize, JsonSchema)]
struct Cpu {
    /// Microseconds.
    user: u64,
    /// Microseconds.
    system: u64,
}

async fn json_snapshot(axum::extract::State(s): State) -> Answer<MetricsSnapshot> {
    let Metrics {
        uptime_secs: uptime,
        activity,
        pool,
        process,
        ..
    } = s.service.metrics();
    let per_second = |n: u64| if uptime > 0.0 { n as f64 / uptime } else { 0.0 };
    let requests: u64 = Op::ALL.iter().map(|&op| activity.requests(op)).sum();
    let messages = activity.messages(Op::Push);
    Answer(MetricsSnapshot {
        uptime: uptime.floor() as u64,
        requests: Rate {
            total: requests,
            rate: per_second(requests),
        },
        messages: Rate {
            total: messages,
            rate: per_second(messages),
        },
        database: Pool {
            pool_size: pool.max,
            idle_connections: pool.idle,
            waiting_requests: pool.waiting,
        },
        memory: Memory {
            rss: process.resident_bytes,
            heap_total: 0,
            heap_used: 0,
            external: 0,
            array_buffers: 0,
        },
        cpu: Cpu {
            user: process.cpu_user_micros,
            system: process.cpu_system_micros,
        },
    })
}

/// How one counter family is read.
type Read = fn(&regent_service::Activity, Op) -> u64;

/// A text exposition with its content type, never cached.
pub(super) fn exposition(text: String) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        text,
    )
        .into_response()
}

async fn prometheus(axum::extract::State(s): State) -> Response {
    let m = s.service.metrics();
    let database_up = s.service.health().await.database;
    let (pool, process) = (&m.pool, &m.process);
    let singles: [(&str, &str, &str, f64); 12] = [
        (
            "queen_uptime_seconds",
            "gauge",
            "Seconds since this broker started.",
            m.uptime_secs,
        ),
        (
            "queen_cpu_user_microseconds_total",
            "counter",
            "User CPU time of this process.",
            process.cpu_user_micros as f64,
        ),
        (
            "queen_cpu_system_microseconds_total",
            "counter",
            "System CPU time of this process.",
            process.cpu_system_micros as f64,
        ),
        (
            "queen_process_resident_memory_bytes",
            "gauge",
            "Resident set size.",
            process.resident_bytes as f64,
        ),
        (
            "queen_process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size.",
            process.virtual_bytes as f64,
        ),
        (
            "queen_db_pool_size",
            "gauge",
            "Most PostgreSQL connections the pool opens (DB_POOL_SIZE).",
            pool.max as f64,
        ),
        (
            "queen_db_pool_idle",
            "gauge",
            "Open connections not in use.",
            pool.idle as f64,
        ),
        (
            "queen_db_pool_active",
            "gauge",
            "Connections in use.",
            pool.open.saturating_sub(pool.idle) as f64,
        ),
        (
            "regent_db_pool_waiting",
            "gauge",
            "Requests waiting for a connection.",
            pool.waiting as f64,
        ),
        (
            "regent_database_up",
            "gauge",
            "1 when PostgreSQL answered this scrape's ping, else 0.",
            f64::from(u8::from(database_up)),
        ),
        (
            "regent_unavailable_total",
            "counter",
            "Answers with status 503 (each carries Retry-After), on any route.",
            m.activity.unavailable() as f64,
        ),
        (
            "regent_tenant_cap_fullest",
            "gauge",
            "The largest share of its stored-message cap (TENANT_LIMITS maxMessages) any tenant holds, as this broker last counted; 0 without caps.",
            m.cap_fullest,
        ),
    ];
    let per_op: [(&str, &str, Read); 2] = [
        ("regent_requests_total", "Requests answered by this broker, by operation.",
            |a, op| a.requests(op)),
        ("regent_messages_total",
            "Messages by operation: pushed and stored (push, transaction), delivered (pop), acknowledged (ack).",
            |a, op| a.messages(op)),
    ];
    let mut out = String::new();
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    for (name, kind, help, value) in singles {
        head(&mut out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
    for (name, help, read) in per_op {
        head(&mut out, name, "counter", help);
        for op in Op::ALL {
            let _ = writeln!(
                out,
                "{name}{{op=\"{}\"}} {}",
                op.name(),
                read(m.activity, op)
            );
        }
    }
    head(
        &mut out,
        "regent_request_duration_seconds",
        "histogram",
        "Time in the broker from a request's start to its answer, by operation (a pop's long-poll wait included).",
    );
    for op in Op::ALL {
        let labels = format!("op=\"{}\"", op.name());
        histogram(
            &mut out,
            "regent_request_duration_seconds",
            &labels,
            &m.activity.took(op),
        );
    }
    head(
        &mut out,
        "regent_first_delivery_seconds",
        "histogram",
        "Time from a message's append to its first delivery.",
    );
    histogram(
        &mut out,
        "regent_first_delivery_seconds",
        "",
        &m.activity.first_delivery(),
    );
    head(
        &mut out,
        "regent_items_total",
        "counter",
        "Items of pushes (and transactions' pushes) and acks by what became of them.",
    );
    for (kind, outcomes) in [("push", &Outcome::PUSH[..]), ("ack", &Outcome::ACK[..])] {
        for &o in outcomes {
            let _ = writeln!(
                out,
                "regent_items_total{{op=\"{kind}\",outcome=\"{}\"}} {}",
                o.name(),
                m.activity.outcomes(o)
            );
        }
    }
    head(
        &mut out,
        "regent_pop_rechecks_total",
        "counter",
        "Attempts of parked long-polls after a wait, by what ended it: a wakeup (a write here or another broker's note) or the recheck timer.",
    );
    for by in Recheck::ALL {
        let _ = writeln!(
            out,
            "regent_pop_rechecks_total{{by=\"{}\"}} {}",
            by.name(),
            m.activity.rechecks(by)
        );
    }
    head(
        &mut out,
        "regent_pop_walks_skipped_total",
        "counter",
        "Claims waiting pops did not make: their group's last walk over its cursors found nothing, and nothing woke the queue since (at most 100 ms).",
    );
    let _ = writeln!(
        out,
        "regent_pop_walks_skipped_total {}",
        m.activity.walks_skipped()
    );
    head(
        &mut out,
        "regent_pending_handovers",
        "gauge",
        "Pop answers holding a lease not yet handed to their connection.",
    );
    let _ = writeln!(out, "regent_pending_handovers {}", m.pending_handovers);
    head(
        &mut out,
        "regent_memory_entries",
        "gauge",
        "Entries in each of this broker's in-memory maps (all bounded).",
    );
    for (map, n) in &m.runtime {
        let _ = writeln!(out, "regent_memory_entries{{map=\"{map}\"}} {n}");
    }
    super::queue_metrics::public(&s, &mut out).await;
    exposition(out)
}

/// One histogram's series: cumulative `_bucket`s (`le` in seconds), `_sum` and `_count`.
fn histogram(out: &mut String, name: &str, labels: &str, s: &Snapshot) {
    let sep = if labels.is_empty() { "" } else { "," };
    for (le, n) in &s.cumulative {
        let le = if le.is_infinite() {
            "+Inf".to_string()
        } else {
            le.to_string()
        };
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {n}");
    }
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {}", s.sum_seconds);
    let _ = writeln!(out, "{name}_count{braces} {}", s.count);
}
