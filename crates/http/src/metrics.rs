//! `GET /metrics` (Queen's JSON snapshot, what `Admin.metrics()` returns) and
//! `GET /metrics/prometheus` (the text exposition a scraper reads). Both are public and read
//! only this process: counters since start, the pool, memory and CPU. Nothing per tenant or
//! per queue, since anyone may call them; unless `METRICS_PER_QUEUE` adds the per-queue
//! families (`crate::queue_metrics`) to the exposition.

use std::fmt::Write;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::State;
use regent_service::health::Metrics;
use regent_service::{Op, Outcome, Recheck, Snapshot};

pub async fn json_snapshot(axum::extract::State(s): State) -> Response {
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
    Json(json!({
        "uptime": uptime.floor() as u64,
        "requests": {"total": requests, "rate": per_second(requests)},
        "messages": {"total": messages, "rate": per_second(messages)},
        "database": {
            "poolSize": pool.max,
            "idleConnections": pool.idle,
            "waitingRequests": pool.waiting,
        },
        "memory": {
            "rss": process.resident_bytes,
            "heapTotal": 0, "heapUsed": 0, "external": 0, "arrayBuffers": 0,
        },
        "cpu": {"user": process.cpu_user_micros, "system": process.cpu_system_micros},
    }))
    .into_response()
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

pub async fn prometheus(axum::extract::State(s): State) -> Response {
    let m = s.service.metrics();
    let (pool, process) = (&m.pool, &m.process);
    let singles: [(&str, &str, &str, f64); 9] = [
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
        "regent_pending_handovers",
        "gauge",
        "Pop answers holding a lease not yet handed to their connection.",
    );
    let _ = writeln!(out, "regent_pending_handovers {}", m.pending_handovers);
    head(
        &mut out,
        "regent_runtime_entries",
        "gauge",
        "Entries in each of this broker's in-memory maps (all bounded).",
    );
    for (map, n) in &m.runtime {
        let _ = writeln!(out, "regent_runtime_entries{{map=\"{map}\"}} {n}");
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
