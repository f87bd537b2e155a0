//! Health, metrics, this document, and the admin switches (spec §2, §14.9, §15).

use axum::http::Method;
use serde_json::json;

use super::schemas::{about, array, boolean, int, num, obj, string};
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[
    ("health", "Health, metrics and this document: public, naming no tenant's data."),
    ("system", "The tenant's maintenance switches and its per-queue metrics (admin). Queen's switches are cluster-wide; Regent's belong to the token's tenant."),
];

pub(super) fn entries() -> Vec<Entry> {
    let health = obj(
        &[
            "status",
            "database",
            "tasksDown",
            "server",
            "worker_id",
            "version",
            "shared_state",
            "queen",
        ],
        json!({
            "status": {"enum": ["healthy", "unhealthy"]},
            "database": {"enum": ["connected", "disconnected"]},
            "tasksDown": about(array(string()), "Background tasks being restarted after a panic (a push or ack flusher, the purge clock, the peer link, the maintenance poll, the retention clock, the series flush, the JWKS refresh)."),
            "server": {"const": "Regent"},
            "worker_id": {"const": 0},
            "version": string(),
            "shared_state": obj(&["enabled"], json!({ "enabled": {"const": false} })),
            "queen": obj(&["worker_id", "status"], json!({ "worker_id": int(), "status": string() })),
        }),
    );
    let rate = obj(
        &["total", "rate"],
        json!({ "total": int(), "rate": about(num(), "Per second since start.") }),
    );
    let metrics = obj(
        &[
            "uptime", "requests", "messages", "database", "memory", "cpu",
        ],
        json!({
            "uptime": about(int(), "Seconds since this broker started."),
            "requests": rate,
            "messages": about(rate.clone(), "Messages pushed."),
            "database": obj(&["poolSize", "idleConnections", "waitingRequests"], json!({
                "poolSize": int(), "idleConnections": int(), "waitingRequests": int(),
            })),
            "memory": obj(&["rss", "heapTotal", "heapUsed", "external", "arrayBuffers"], json!({
                "rss": about(int(), "Resident bytes."),
                "heapTotal": {"const": 0}, "heapUsed": {"const": 0}, "external": {"const": 0}, "arrayBuffers": {"const": 0},
            })),
            "cpu": obj(&["user", "system"], json!({
                "user": about(int(), "Microseconds."), "system": about(int(), "Microseconds."),
            })),
        }),
    );
    let push_switch = obj(
        &[
            "maintenanceMode",
            "bufferedMessages",
            "bufferHealthy",
            "message",
        ],
        json!({
            "maintenanceMode": boolean(),
            "bufferedMessages": about(int(), "Pushes held in the buffer, waiting to be appended."),
            "bufferHealthy": {"const": true},
            "message": string(),
        }),
    );
    let pop_switch = obj(
        &["popMaintenanceMode", "message"],
        json!({ "popMaintenanceMode": boolean(), "message": string() }),
    );
    let enabled = obj(&["enabled"], json!({ "enabled": boolean() }));
    vec![
        Entry::new("health", Method::GET, "/health", "Health of this broker")
            .about(r#"
200 while the database answers and every background task runs; 503 (with `Retry-After: 1`) and the same body otherwise, naming what is wrong, so an orchestrator routes around this broker. Queen's keys are kept (`worker_id` snake_case, `shared_state` reduced to `{"enabled": false}`), with `tasksDown` added. Python: `Admin.health()`. Never needs a token.
"#)
            .reply(200, "Healthy.", health.clone())
            .reply_raw(503, json!({
                "description": "Unhealthy: the database is down or a background task is being restarted.",
                "headers": {
                    "x-request-id": { "$ref": "#/components/headers/RequestId" },
                    "Retry-After": { "$ref": "#/components/headers/RetryAfter" },
                },
                "content": { "application/json": { "schema": health } },
            })),
        Entry::new("health", Method::GET, "/metrics", "Queen's JSON metrics snapshot")
            .about(r#"
Queen's JSON snapshot with real numbers for this process: requests and pushed messages since start, the PostgreSQL pool, resident memory, CPU (Queen 0.15 stubs most of these with zeros). Nothing per tenant or per queue: anyone may call it. Python: `Admin.metrics()` (its docstring says Prometheus; it returns this JSON).
"#)
            .reply(200, "The snapshot.", metrics),
        Entry::new("health", Method::GET, "/metrics/prometheus", "Prometheus text exposition")
            .about(r#"
This broker's uptime, CPU, memory and pool under Queen's `queen_*` names, and Regent's `regent_requests_total{op}`, `regent_messages_total{op}` (push, pop, ack, transaction), `regent_db_pool_waiting`, `regent_pending_handovers`, `regent_pop_rechecks_total{by}` (what ended each wait of a parked long-poll: `wakeup` or `timer`), `regent_runtime_entries{map}`, the request-duration and first-delivery histograms and `regent_items_total{op,outcome}`. Names no queue or tenant, unless the broker runs with `METRICS_PER_QUEUE=true`: then every tenant's per-queue families follow (as `GET /api/v1/metrics/queues` serves them for one tenant). Not used by the Python client.
"#)
            .reply_raw(200, json!({
                "description": "The exposition (`text/plain; version=0.0.4`), `Cache-Control: no-cache`.",
                "headers": { "x-request-id": { "$ref": "#/components/headers/RequestId" } },
                "content": { "text/plain; version=0.0.4; charset=utf-8": { "schema": string() } },
            })),
        Entry::new("system", Method::GET, "/api/v1/metrics/queues", "Per-queue Prometheus families of the tenant")
            .about(r#"
A Regent extension, admin: the text exposition of the token's tenant's queues (with authentication off, tenant `default`), whatever `METRICS_PER_QUEUE` says: `regent_queue_depth{tenant,queue}` (messages some consumer group has still to read), `regent_queue_lag_messages{tenant,queue,group}` (messages after the group's cursors), `queen_dlq_depth_by_queue{tenant,queue}` (dead letters), and this broker's `regent_queue_pushed_total{tenant,queue}` and `regent_queue_delivered_total{tenant,queue}` since it started. The `METRICS_TOP_QUEUES` deepest queues by name (default 100), the rest summed into `queue="_other"`; per queue the 20 groups furthest behind, the rest in `group="_other"`. Depth, lag and dead letters are the database's (the same on every broker: take `max`); the totals are this broker's (take `sum`). Not used by the Python client.
"#)
            .reply_raw(200, json!({
                "description": "The exposition (`text/plain; version=0.0.4`), `Cache-Control: no-cache`.",
                "headers": { "x-request-id": { "$ref": "#/components/headers/RequestId" } },
                "content": { "text/plain; version=0.0.4; charset=utf-8": { "schema": string() } },
            })),
        Entry::new("health", Method::GET, "/api/v1/openapi.json", "This OpenAPI document")
            .about(r#"
A Regent extension: the OpenAPI 3.1 document of every route the broker serves, generated from its route table, so a route cannot be served undocumented. Public: it names no tenant's data.
"#)
            .reply(200, "The document.", json!({ "type": "object", "required": ["openapi", "info", "paths"] })),
        Entry::new("system", Method::GET, "/api/v1/whoami", "The tenant and role this request acts as")
            .about(r#"
A Regent extension, asked by the web console: the tenant and the role (as its access level) of the request's token, or of the one a proxy in front of the broker adds. With authentication off every request acts for the default tenant and nothing is refused, so the role is `admin` and `verified` is false.
"#)
            .reply(200, "Who the request is.", obj(&["authEnabled", "tenant", "role", "verified", "sub", "expiresAt"], json!({
                "authEnabled": boolean(),
                "tenant": string(),
                "role": {"enum": ["read-only", "read-write", "admin"]},
                "verified": about(boolean(), "Whether a token was verified (false with authentication off, and on `JWT_SKIP_PATHS`)."),
                "sub": {"type": ["string", "null"]},
                "expiresAt": {"type": ["string", "null"], "format": "date-time"},
            }))),
        Entry::new("system", Method::POST, "/api/v1/stats/refresh", "Recount the stats snapshot now")
            .about(r#"
Runs a stats round at once (waiting for one another broker is running), so the counts of the overview, the listings, the queue totals, the depth and the consumer-group routes include every write committed before the call; answers when it is done. The round counts every queue of the fleet. The body is ignored. Python: `Admin.refresh_consumer_stats()`.
"#)
            .reply(200, "Counted.", obj(&["success", "queues", "tookMs"], json!({
                "success": {"const": true},
                "queues": about(int(), "Queues counted."),
                "tookMs": num(),
            }))),
        Entry::new("system", Method::GET, "/api/v1/system/maintenance", "Read the push maintenance switch")
            .about(r#"
The tenant's two switches and the pushes buffered under push maintenance. `bufferStats` keeps Queen's shape (its file buffer's figures; Regent's buffer is a PostgreSQL table, so only `pendingCount` is real). Python: `Admin.get_maintenance_mode()`.
"#)
            .reply(200, "The switches.", obj(
                &["maintenanceMode", "popMaintenanceMode", "bufferedMessages", "bufferHealthy", "bufferStats"],
                json!({
                    "maintenanceMode": boolean(), "popMaintenanceMode": boolean(),
                    "bufferedMessages": int(), "bufferHealthy": {"const": true},
                    "bufferStats": obj(&["pendingCount", "failedCount", "dbHealthy", "failedFiles"], json!({
                        "pendingCount": int(), "failedCount": {"const": 0}, "dbHealthy": {"const": true},
                        "failedFiles": obj(&["count", "totalBytes", "totalMB", "failoverCount", "qos0Count"], json!({
                            "count": int(), "totalBytes": int(), "totalMB": num(), "failoverCount": int(), "qos0Count": int(),
                        })),
                    })),
                }),
            )),
        Entry::new("system", Method::POST, "/api/v1/system/maintenance", "Set the push maintenance switch")
            .about(r#"
On: the tenant's pushes (and the pushes of `/api/v1/transaction`) are held in the database's push buffer, answered `buffered`, deduplicated as usual and invisible to pops; dead-letter requeues are refused with 409. Off: a broker appends them in arrival order, exactly once, before any new push of the tenant. Every broker of the database sees the switch within 250 ms. Python: `Admin.set_maintenance_mode(enabled)`.
"#)
            .body(true, "The switch.", enabled.clone())
            .fails(400, "`enabled (boolean) is required`; `Empty request body`, `Invalid JSON: …`.")
            .reply(200, "The switch now.", push_switch),
        Entry::new("system", Method::GET, "/api/v1/system/maintenance/pop", "Read the pop maintenance switch")
            .about("Python: `Admin.get_pop_maintenance_mode()`.")
            .reply(200, "The switch.", pop_switch.clone()),
        Entry::new("system", Method::POST, "/api/v1/system/maintenance/pop", "Set the pop maintenance switch")
            .about(r#"
On: every pop of the tenant answers at once with its empty shape and `"paused": true` (200, where Queen 0.15 sends a 204 with a body), long-polls already parked included. Pushes and acks go on. Python: `Admin.set_pop_maintenance_mode(enabled)`.
"#)
            .body(true, "The switch.", enabled)
            .fails(400, "`enabled (boolean) is required`; `Empty request body`, `Invalid JSON: …`.")
            .reply(200, "The switch now.", pop_switch),
        Entry::new("system", Method::GET, "/api/v1/system/shared-state", "How the switches travel between brokers")
            .about(r#"
This broker's id and how maintenance switches reach the other brokers (polled from the database every 250 ms), with the tenant's switches. Queen answers its UDP cluster-sync statistics here; the keys kept are `enabled`, `running`, `server_id`, `maintenance_mode`, `pop_maintenance_mode`. No Python client method.
"#)
            .reply(200, "The state.", obj(
                &["enabled", "running", "server_id", "sync", "poll_interval_ms", "maintenance_mode", "pop_maintenance_mode", "buffered_messages"],
                json!({
                    "enabled": {"const": true}, "running": {"const": true},
                    "server_id": string(), "sync": {"const": "database"},
                    "poll_interval_ms": int(), "maintenance_mode": boolean(),
                    "pop_maintenance_mode": boolean(), "buffered_messages": int(),
                }),
            )),
    ]
}
