//! The fleet's metrics (spec §13.7): `GET /api/v1/analytics/system-metrics` and
//! `/worker-metrics` from every broker's samples, `/postgres-stats` from PostgreSQL's
//! statistics views; and `GET /api/v1/status/buffers` (§13.6). A Queen field Regent has no
//! measurement for is `null`, never a made-up number (README, "Fleet metrics").

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::auth::Principal;
use super::error::ApiError;
use super::params::Params;
use super::time::millis;
use super::State;
use regent_service::fleet::{percent, Cpu, FleetPoint, Gauge, Ops, SystemPoint, Window};

fn instant(p: &Params, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    p.str(key)
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ApiError::bad_request(format!("{key} must be an ISO-8601 timestamp")))
        })
        .transpose()
}

/// `from`, `to` (default: the last hour), `hostname`, `workerId` (a broker's id).
pub(crate) fn window(p: &Params) -> Result<Window, ApiError> {
    Ok(Window::new(
        instant(p, "from")?,
        instant(p, "to")?,
        p.str("hostname").map(String::from),
        p.str("workerId").map(String::from),
    )?)
}

fn time_range(w: &Window) -> Value {
    json!({ "from": millis(w.from), "to": millis(w.to) })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn gauge(g: &Gauge) -> Value {
    json!({ "avg": round2(g.avg), "min": g.min, "max": g.max, "last": g.last })
}

fn cpu_percent(c: &Cpu) -> Value {
    json!({
        "avg": round2(c.avg), "min": round2(c.min), "max": round2(c.max), "last": round2(c.last),
    })
}

fn ops(o: &Ops) -> Value {
    json!({ "push": o.push, "pop": o.pop, "ack": o.ack, "transaction": o.transaction })
}

/// One broker's bucket: CPU in percent of one core and in microseconds, memory, the pool,
/// requests and messages in the bucket, pending handovers, the in-memory maps.
fn system_metrics_of(p: &SystemPoint) -> Value {
    let runtime: Map<String, Value> = p
        .runtime
        .iter()
        .map(|m| (m.name.clone(), json!({ "max": m.max, "last": m.last })))
        .collect();
    json!({
        "cpu": {
            "user_percent": cpu_percent(&p.cpu_user),
            "system_percent": cpu_percent(&p.cpu_system),
            "user_us": p.cpu_user.micros,
            "system_us": p.cpu_system.micros,
        },
        "memory": { "rss_bytes": gauge(&p.rss_bytes), "virtual_bytes": gauge(&p.virtual_bytes) },
        "database": {
            "pool_size": gauge(&p.pool_size),
            "pool_open": gauge(&p.pool_open),
            "pool_active": gauge(&p.pool_active),
            "pool_idle": gauge(&p.pool_idle),
            "pool_waiting": gauge(&p.pool_waiting),
        },
        "requests": ops(&p.requests),
        "messages": ops(&p.messages),
        "handovers": { "pending": gauge(&p.pending_handovers) },
        "runtime": runtime,
    })
}

/// `Admin.get_system_metrics`: each broker's samples of the window, bucketed.
pub async fn system_metrics(AxState(s): State, p: Params) -> Result<Json<Value>, ApiError> {
    let w = window(&p)?;
    let points = s.service.system_metrics(&w).await?;
    let mut replicas: Vec<Value> = Vec::new();
    let mut current: Option<uuid::Uuid> = None;
    for point in &points {
        if current != Some(point.broker_id) {
            current = Some(point.broker_id);
            replicas.push(json!({
                "hostname": point.hostname, "port": point.port,
                "workerId": point.broker_id.to_string(), "timeSeries": [],
            }));
        }
        let replica = replicas.last_mut().expect("pushed above");
        replica["timeSeries"]
            .as_array_mut()
            .expect("an array")
            .push(json!({
                "timestamp": millis(point.bucket), "sampleCount": point.samples,
                "coveredMs": point.covered_ms, "metrics": system_metrics_of(point),
            }));
    }
    Ok(Json(json!({
        "timeRange": time_range(&w),
        "replicas": replicas,
        "replicaCount": replicas.len(),
        "bucketMinutes": w.bucket_minutes(),
        "pointCount": points.len(),
    })))
}

fn fleet_point(f: &FleetPoint, bucket_seconds: f64) -> Value {
    let rate = |n: i64| round2(n as f64 / bucket_seconds);
    let (m, r) = (&f.messages, &f.requests);
    json!({
        "timestamp": millis(f.bucket),
        "brokers": f.brokers, "sampleCount": f.samples,
        "pushMessages": m.push, "popMessages": m.pop, "ackMessages": m.ack,
        "transactionMessages": m.transaction,
        "pushRequests": r.push, "popRequests": r.pop, "ackRequests": r.ack,
        "transactionRequests": r.transaction,
        "pushPerSecond": rate(m.push), "popPerSecond": rate(m.pop), "ackPerSecond": rate(m.ack),
        "cpuPercent": round2(f.cpu_percent),
        "dbConnections": round2(f.db_connections),
        "avgJobQueueSize": round2(f.avg_waiting), "maxJobQueueSize": f.max_waiting,
        // Queen's event loop, its slots and backoff, pop lag and error counters: Regent
        // measures none of them.
        "jobsDone": null,
        "avgEventLoopLagMs": null, "maxEventLoopLagMs": null,
        "avgFreeSlots": null, "minFreeSlots": null, "backoffSize": null,
        "avgLagMs": null, "maxLagMs": null, "lagCount": null,
        "dbErrors": null, "ackSuccess": null, "ackFailed": null, "dlqCount": null,
    })
}

/// `Admin.get_worker_metrics`: the fleet's buckets (newest first), the brokers that sampled in
/// the last 5 minutes, the tenant's queues of the window, and the window's totals.
pub async fn worker_metrics(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let w = window(&p)?;
    let m = s.service.worker_metrics(&who.tenant, &w).await?;
    let bucket_seconds = f64::from(w.bucket_minutes()) * 60.0;
    let series: Vec<Value> = m
        .series
        .iter()
        .map(|f| fleet_point(f, bucket_seconds))
        .collect();
    let workers: Vec<Value> = m
        .brokers
        .iter()
        .map(|b| {
            json!({
                "hostname": b.hostname, "port": b.port, "workerId": b.broker_id.to_string(),
                "lastSeen": millis(b.last_seen), "sampleCount": b.samples,
                "messagesProcessed": b.messages.push + b.messages.ack,
                "requests": ops(&b.requests), "messages": ops(&b.messages),
                "cpuPercent": round2(b.cpu_percent), "rssBytes": b.rss_bytes,
                "dbConnections": b.pool_open, "jobQueueSize": b.pool_waiting,
                "pendingHandovers": b.pending_handovers,
                "avgEventLoopLagMs": null, "maxEventLoopLagMs": null,
                "freeSlots": null, "backoffSize": null,
            })
        })
        .collect();
    let queues: Vec<Value> = m
        .queues
        .iter()
        .map(|q| {
            json!({
                "queueName": q.queue, "popCount": q.delivered, "pushCount": q.pushed,
                "completedCount": q.completed, "failedCount": q.failed,
                "deadLetterCount": q.dead_lettered,
                "avgLagMs": null, "maxLagMs": null,
            })
        })
        .collect();
    let sum = |f: fn(&FleetPoint) -> i64| m.series.iter().map(f).sum::<i64>();
    Ok(Json(json!({
        "timeRange": time_range(&w),
        "bucketMinutes": w.bucket_minutes(),
        "pointCount": series.len(),
        "timeSeries": series,
        "workers": workers,
        "queues": queues,
        "summary": {
            "totalPushMessages": sum(|f| f.messages.push),
            "totalPopMessages": sum(|f| f.messages.pop),
            "totalAckMessages": sum(|f| f.messages.ack),
            "totalTransactionMessages": sum(|f| f.messages.transaction),
            "totalPushRequests": sum(|f| f.requests.push),
            "totalPopRequests": sum(|f| f.requests.pop),
            "totalAckRequests": sum(|f| f.requests.ack),
            "totalTransactionRequests": sum(|f| f.requests.transaction),
            "totalDbErrors": null, "totalAckFailed": null, "totalDlq": null,
            "pendingMessages": null,
        },
    })))
}

/// `(key of the pretty size, key of the bytes)` of each memory setting shown.
fn setting_keys(name: &str) -> (&'static str, &'static str) {
    match name {
        "shared_buffers" => ("sharedBuffersSize", "sharedBuffersBytes"),
        "effective_cache_size" => ("effectiveCacheSize", "effectiveCacheSizeBytes"),
        "work_mem" => ("workMem", "workMemBytes"),
        "maintenance_work_mem" => ("maintenanceWorkMem", "maintenanceWorkMemBytes"),
        "wal_buffers" => ("walBuffers", "walBuffersBytes"),
        _ => ("tempBuffers", "tempBuffersBytes"),
    }
}

/// `Admin.get_postgres_stats`: PostgreSQL's own statistics, every list at most 20 long; no
/// session's statement text, only its first keyword.
pub async fn postgres_stats(AxState(s): State) -> Result<Json<Value>, ApiError> {
    let st = s.service.postgres_stats().await?;
    let d = &st.database;
    let ratio = |hit: i64, read: i64| percent(hit, hit + read);
    let at = |t: Option<DateTime<Utc>>| t.map(millis);
    let table_cache: Vec<Value> = st
        .table_cache
        .iter()
        .map(|c| {
            json!({
                "schema": c.schema, "table": c.table, "diskReads": c.blocks_read,
                "cacheHits": c.blocks_hit, "cacheHitRatio": ratio(c.blocks_hit, c.blocks_read),
            })
        })
        .collect();
    let index_cache: Vec<Value> = st
        .index_cache
        .iter()
        .map(|c| {
            json!({
                "schema": c.schema, "index": c.index, "table": c.table,
                "diskReads": c.blocks_read, "cacheHits": c.blocks_hit,
                "cacheHitRatio": ratio(c.blocks_hit, c.blocks_read),
            })
        })
        .collect();
    let cs = &st.cache_summary;
    let dead_tuples: Vec<Value> = st
        .dead_tuples
        .iter()
        .map(|t| {
            json!({
                "schema": t.schema, "table": t.table, "liveTuples": t.live_tuples,
                "deadTuples": t.dead_tuples,
                "deadPercentage": percent(t.dead_tuples, t.live_tuples + t.dead_tuples),
                "lastVacuum": at(t.last_vacuum), "lastAutovacuum": at(t.last_autovacuum),
            })
        })
        .collect();
    let hot_updates: Vec<Value> = st
        .hot_updates
        .iter()
        .map(|t| {
            json!({
                "schema": t.schema, "table": t.table, "totalUpdates": t.updates,
                "hotUpdates": t.hot_updates,
                "hotUpdatePercentage": percent(t.hot_updates, t.updates),
            })
        })
        .collect();
    let active: Vec<Value> = st
        .active
        .iter()
        .map(|q| {
            json!({
                "pid": q.pid, "state": q.state, "duration": round2(q.seconds),
                "waitEventType": q.wait_event_type, "waitEvent": q.wait_event,
                "backendType": q.backend_type,
                // The text is withheld: another session's statement can carry another
                // tenant's data.
                "query": null, "queryKind": q.kind,
            })
        })
        .collect();
    let autovacuum: Vec<Value> = st
        .autovacuum_due
        .iter()
        .map(|t| {
            json!({
                "schema": t.schema, "table": t.table, "deadTuples": t.dead_tuples,
                "vacuumThreshold": t.vacuum_threshold, "autovacuumEnabled": t.autovacuum_enabled,
                "autovacuumCount": t.autovacuum_count, "autoanalyzeCount": t.autoanalyze_count,
                "lastAutovacuum": at(t.last_autovacuum), "lastAutoanalyze": at(t.last_autoanalyze),
            })
        })
        .collect();
    let mut buffer_config = Map::new();
    for setting in &st.settings {
        let (pretty, bytes) = setting_keys(&setting.name);
        buffer_config.insert(pretty.into(), json!(setting.pretty));
        buffer_config.insert(bytes.into(), json!(setting.bytes));
    }
    let buffer_usage: Vec<Value> = st
        .buffered
        .iter()
        .flatten()
        .map(|b| {
            json!({
                "object": b.relation, "buffers": b.buffers, "bufferedBytes": b.bytes,
                "bufferedSize": b.size, "percentOfCache": round2(b.percent_of_cache),
            })
        })
        .collect();
    let table_sizes: Vec<Value> = st
        .table_sizes
        .iter()
        .map(|t| {
            json!({
                "schema": t.schema, "table": t.table, "totalSize": t.total,
                "tableSize": t.table_size, "indexSize": t.index_size,
                "totalBytes": t.total_bytes, "tableBytes": t.table_bytes,
                "indexBytes": t.index_bytes, "rows": t.live_tuples,
            })
        })
        .collect();
    Ok(Json(json!({
        "timestamp": millis(st.at),
        "database": d.name,
        "databaseCache": {
            "blocksRead": d.blocks_read, "blocksHit": d.blocks_hit,
            "cacheHitRatio": ratio(d.blocks_hit, d.blocks_read),
            "sizeBytes": d.size_bytes, "size": d.size, "connections": d.backends,
            "transactionsCommitted": d.commits, "transactionsRolledBack": d.rollbacks,
            "deadlocks": d.deadlocks, "conflicts": d.conflicts,
            "tempFiles": d.temp_files, "tempBytes": d.temp_bytes,
            "statsReset": at(d.stats_reset),
        },
        "tableCache": table_cache,
        "indexCache": index_cache,
        "cacheSummary": {
            "tables": { "diskReads": cs.table_read, "cacheHits": cs.table_hit,
                        "hitRatio": ratio(cs.table_hit, cs.table_read) },
            "indexes": { "diskReads": cs.index_read, "cacheHits": cs.index_hit,
                         "hitRatio": ratio(cs.index_hit, cs.index_read) },
        },
        "deadTuples": dead_tuples,
        "hotUpdates": hot_updates,
        "activeQueries": active,
        "autovacuumStatus": autovacuum,
        "bufferConfig": buffer_config,
        "bufferUsage": buffer_usage,
        "bufferUsageAvailable": st.buffered.is_some(),
        "tableSizes": table_sizes,
    })))
}

/// `GET /api/v1/status/buffers`: Regent has no file buffer; `pending` is the tenant's pushes
/// held in the push buffer (maintenance), `null` when the database did not answer the count.
pub async fn buffers(AxState(s): State, Extension(who): Extension<Principal>) -> Json<Value> {
    let b = s.service.buffers(&who.tenant).await;
    Json(json!({ "pending": b.pending, "failed": 0, "dbHealthy": b.db_healthy, "worker": 0 }))
}
