//! The Prometheus families that name queues: depth, each consumer group's lag, dead letters,
//! and the messages this broker pushed and delivered per queue; and this broker's counters per
//! stream query, and per tenant of its key/value operations, timers and ephemeral queues. They
//! name tenants and their queues, so they are always on the admin route `GET /api/v1/metrics/queues` (the token's
//! tenant's queues only), and on the public `/metrics/prometheus` (every tenant's) only when
//! `METRICS_PER_QUEUE` says so. At most `METRICS_TOP_QUEUES` queues by name, the deepest;
//! the rest in one `queue="_other"` series (docs/metrics.md, "Per-queue metrics").

use std::fmt::Write;

use axum::extract::State as AxState;
use axum::http::Method;
use axum::response::Response;
use axum::Extension;

use super::auth::Principal;
use super::error::ApiError;
use super::maintenance;
use super::metrics::{exposition, exposition_reply};
use super::openapi::Doc;
use super::routes::{route, Entry, Level::Admin};
use super::{AppState, State};
use regent_service::ephemeral::EphemeralTotal;
use regent_service::kv::KvTotal;
use regent_service::queue_metrics::{QueueLine, QueueMetrics};
use regent_service::streams::StreamTotal;
use regent_service::timers::{TimerTotal, LATENESS_BUCKETS_MS};

/// A label value as the text format wants it: backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(l: &QueueLine) -> String {
    format!(
        "tenant=\"{}\",queue=\"{}\"",
        escape(&l.tenant),
        escape(&l.queue)
    )
}

/// Appends the families, each with its HELP and TYPE, one series per queue shown and one for
/// the rest.
fn families(m: &QueueMetrics, out: &mut String) {
    let lines: Vec<&QueueLine> = m.queues.iter().chain(m.other.as_ref()).collect();
    type Value = fn(&QueueLine) -> String;
    let per_queue: [(&str, &str, &str, Value); 4] = [
        (
            "regent_queue_depth",
            "gauge",
            "Messages kept that some consumer group of the queue has still to read (after each partition's furthest-behind cursor).",
            |l| l.depth.to_string(),
        ),
        (
            "queen_dlq_depth_by_queue",
            "gauge",
            "Dead letters kept of the queue.",
            |l| l.dead_letters.to_string(),
        ),
        (
            "regent_queue_pushed_total",
            "counter",
            "Messages pushed to the queue through this broker since it started.",
            |l| l.pushed.to_string(),
        ),
        (
            "regent_queue_delivered_total",
            "counter",
            "Messages of the queue this broker delivered since it started.",
            |l| l.delivered.to_string(),
        ),
    ];
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    for (name, kind, help, value) in per_queue {
        head(out, name, kind, help);
        for l in &lines {
            let _ = writeln!(out, "{name}{{{}}} {}", labels(l), value(l));
        }
    }
    head(
        out,
        "regent_queue_lag_messages",
        "gauge",
        "Messages after a consumer group's cursors on the queue.",
    );
    for l in &lines {
        for (group, lag) in &l.groups {
            let _ = writeln!(
                out,
                "regent_queue_lag_messages{{{},group=\"{}\"}} {lag}",
                labels(l),
                escape(group)
            );
        }
    }
}

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::GET, "/api/v1/metrics/queues", Admin, queues)
        .reads_nothing()
        .doc(
            Doc::op(
                maintenance::TAG,
                "Per-queue Prometheus families of the tenant",
            )
            .reply_raw(200, exposition_reply()),
        )]
}

/// `GET /api/v1/metrics/queues` (admin): the per-queue families of the token's tenant.
async fn queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Response, ApiError> {
    let m = s
        .service
        .queue_metrics(Some(&who.tenant), s.config.metrics_top_queues)
        .await?;
    let mut out = String::new();
    families(&m, &mut out);
    streams(&s, Some(&who.tenant), &mut out);
    kv(&s, Some(&who.tenant), &mut out);
    timers(&s, Some(&who.tenant), &mut out);
    ephemeral(&s, Some(&who.tenant), &mut out).await;
    Ok(exposition(out))
}

/// The families of every tenant for the public exposition, when `METRICS_PER_QUEUE` is on.
/// A database that does not answer leaves them out: the public route never fails.
pub(super) async fn public(s: &AppState, out: &mut String) {
    if !s.config.metrics_per_queue {
        return;
    }
    match s
        .service
        .queue_metrics(None, s.config.metrics_top_queues)
        .await
    {
        Ok(m) => families(&m, out),
        Err(e) => tracing::debug!(error = %e, "the per-queue metrics were left out"),
    }
    streams(s, None, out);
    kv(s, None, out);
    timers(s, None, out);
    ephemeral(s, None, out).await;
}

/// A counter family: its name, its help text, and what it reads of the counts.
type Family<T> = (&'static str, &'static str, fn(&T) -> u64);

/// Counter `families`, each with its HELP and TYPE and one series per tenant of `totals`.
fn per_tenant<T>(out: &mut String, totals: &[(String, T)], families: &[Family<T>]) {
    for (name, help, read) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (tenant, t) in totals {
            let _ = writeln!(out, "{name}{{tenant=\"{}\"}} {}", escape(tenant), read(t));
        }
    }
}

/// This broker's key/value counters of each tenant (or of `tenant` only).
fn kv(s: &AppState, tenant: Option<&str>, out: &mut String) {
    let totals: Vec<_> = s
        .service
        .kv()
        .totals()
        .into_iter()
        .filter(|(t, _)| tenant.is_none_or(|want| want == t))
        .collect();
    let families: [Family<KvTotal>; 4] = [
        ("regent_kv_reads_total", "Key/value reads (get, getMany, getPrefix) this broker committed.", |t| t.reads),
        ("regent_kv_writes_total", "Key/value writes this broker committed that applied.", |t| t.writes),
        ("regent_kv_refused_total", "Key/value writes committed that did not apply (expect, absent, a bound).", |t| t.refused),
        ("regent_kv_rollbacks_total", "Requests and bundles rolled back by a required key/value operation that did not apply.", |t| t.rollbacks),
    ];
    per_tenant(out, &totals, &families);
}

/// This broker's counters of each stream query (of `tenant`, or of every tenant), labelled
/// by tenant and query name.
fn streams(s: &AppState, tenant: Option<&str>, out: &mut String) {
    let totals: Vec<_> = s
        .service
        .streams()
        .totals()
        .into_iter()
        .filter(|(t, _, _)| tenant.is_none_or(|want| want == t))
        .collect();
    let families: [Family<StreamTotal>; 5] = [
        ("regent_stream_cycles_total", "Stream cycles this broker committed, per query.", |t| t.cycles),
        ("regent_stream_state_ops_total", "State operations those cycles applied.", |t| t.state_ops),
        ("regent_stream_pushed_total", "Sink messages those cycles stored.", |t| t.pushed),
        ("regent_stream_replays_total", "Cycles their client repeated after a lost answer: answered from the first commit, nothing applied again.", |t| t.replays),
        ("regent_stream_failures_total", "Cycles refused or failed, nothing committed.", |t| t.failures),
    ];
    for (name, help, read) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (tenant, query, t) in &totals {
            let (tenant, query) = (escape(tenant), escape(query));
            let _ = writeln!(
                out,
                "{name}{{tenant=\"{tenant}\",query=\"{query}\"}} {}",
                read(t)
            );
        }
    }
}

/// This broker's timer counters and lateness histogram (of `tenant`, or of every tenant),
/// labelled by tenant.
fn timers(s: &AppState, tenant: Option<&str>, out: &mut String) {
    let totals: Vec<_> = s
        .service
        .timers()
        .totals()
        .into_iter()
        .filter(|(t, _)| tenant.is_none_or(|want| want == t))
        .collect();
    let families: [Family<TimerTotal>; 5] = [
        (
            "regent_timers_scheduled_total",
            "Timers this broker stored under a key with no pending timer.",
            |t| t.scheduled,
        ),
        (
            "regent_timers_rescheduled_total",
            "Timers this broker stored in place of a pending one.",
            |t| t.rescheduled,
        ),
        (
            "regent_timers_cancelled_total",
            "Pending timers this broker cancelled.",
            |t| t.cancelled,
        ),
        (
            "regent_timers_too_late_total",
            "Schedules and cancels that found a fire holding their timer (nothing changed).",
            |t| t.too_late,
        ),
        (
            "regent_timers_fired_total",
            "Timers whose message this broker pushed.",
            |t| t.fired,
        ),
    ];
    per_tenant(out, &totals, &families);
    let name = "regent_timer_lateness_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} How long after its deliverAt each timer this broker fired was committed.\n# TYPE {name} histogram"
    );
    for (tenant, t) in &totals {
        let tenant = escape(tenant);
        let mut seen = 0;
        for (bound, n) in LATENESS_BUCKETS_MS.iter().zip(t.lateness) {
            seen += n;
            let le = bound / 1000.0;
            let _ = writeln!(
                out,
                "{name}_bucket{{tenant=\"{tenant}\",le=\"{le}\"}} {seen}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{tenant=\"{tenant}\",le=\"+Inf\"}} {}",
            t.fired
        );
        let _ = writeln!(
            out,
            "{name}_sum{{tenant=\"{tenant}\"}} {}",
            t.lateness_ms / 1000.0
        );
        let _ = writeln!(out, "{name}_count{{tenant=\"{tenant}\"}} {}", t.fired);
    }
}

/// Per tenant (`tenant`'s, or every tenant's): this broker's ephemeral counters, and what
/// the tenant's ephemeral queues hold now (read from the database; left out when it does
/// not answer).
async fn ephemeral(s: &AppState, tenant: Option<&str>, out: &mut String) {
    let mine = |t: &str| tenant.is_none_or(|want| want == t);
    let totals: Vec<_> = s
        .service
        .ephemeral()
        .totals()
        .into_iter()
        .filter(|(t, _)| mine(t))
        .collect();
    let families: [Family<EphemeralTotal>; 3] = [
        (
            "regent_ephemeral_pushed_total",
            "Messages this broker stored in ephemeral queues.",
            |t| t.pushed,
        ),
        (
            "regent_ephemeral_popped_total",
            "Ephemeral messages this broker handed to pops, redeliveries included.",
            |t| t.popped,
        ),
        (
            "regent_ephemeral_acked_total",
            "Ephemeral messages acked as completed through this broker.",
            |t| t.acked,
        ),
    ];
    per_tenant(out, &totals, &families);
    let name = "regent_ephemeral_dropped_total";
    let _ = writeln!(out, "# HELP {name} Ephemeral messages dropped by this broker: to make room (bounds), past their ttl (ttl), past the retry limit (retry).\n# TYPE {name} counter");
    for (tenant, t) in &totals {
        for (reason, n) in [
            ("bounds", t.dropped_bounds),
            ("ttl", t.dropped_ttl),
            ("retry", t.dropped_retry),
        ] {
            let _ = writeln!(
                out,
                "{name}{{tenant=\"{}\",reason=\"{reason}\"}} {n}",
                escape(tenant)
            );
        }
    }
    let held = match s.service.ephemeral().held().await {
        Ok(h) => h,
        Err(e) => return tracing::debug!(error = %e, "the ephemeral gauges were left out"),
    };
    type Gauge = (
        &'static str,
        &'static str,
        fn(&(String, i64, i64, i64)) -> i64,
    );
    let gauges: [Gauge; 3] = [
        (
            "regent_ephemeral_queues",
            "Ephemeral queues with contents or consumers, per tenant.",
            |h| h.1,
        ),
        (
            "regent_ephemeral_messages",
            "Messages the tenant's ephemeral queues hold.",
            |h| h.2,
        ),
        (
            "regent_ephemeral_bytes",
            "Payload bytes the tenant's ephemeral queues hold.",
            |h| h.3,
        ),
    ];
    for (name, help, read) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for h in held.iter().filter(|h| mine(&h.0)) {
            let _ = writeln!(out, "{name}{{tenant=\"{}\"}} {}", escape(&h.0), read(h));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("line\nbreak"), "line\\nbreak");
        assert_eq!(escape("plain"), "plain");
    }
}
