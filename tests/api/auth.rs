//! JWT authentication (HS256): the route table walked with every kind of token, Queen's 401
//! and 403 texts, and unknown paths staying 404.

use jsonwebtoken::Algorithm;
use regent::http::auth::Level;
use regent::http::routes;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{
    authed_broker, authed_broker_with, broker_with, signed, token, Broker, SECRET,
};

/// A concrete path for a route template.
fn path_of(template: &str) -> String {
    template
        .replace("{queue}", "authq")
        .replace("{group}", "g")
        .replace("{partition}", "p")
        .replace("{lease_id}", "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b")
        .replace("{*file}", &console_asset()[7..])
        .replace("{*timer_key}", "order/42")
}

/// An asset the embedded console bundle really holds (`assets/…`): its names are hashed.
fn console_asset() -> String {
    regent::http::console::asset_names()
        .into_iter()
        .next()
        .expect("the console bundle has assets")
}

async fn call(b: &Broker, method: &Method, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut req = b.http.request(method.clone(), format!("{}{}", b.url, path));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    if *method == Method::POST {
        req = req.header("content-type", "application/json").body("{}");
    }
    let res = req.send().await.expect("request sent");
    let status = res.status();
    let v = res.json::<Value>().await.unwrap_or(Value::Null);
    (status, v)
}

/// The levels of spec appendix B.5, for the routes Regent serves: the table must say the same.
#[test]
fn the_route_table_gives_the_specs_levels() {
    let spec = [
        (Method::GET, "/health", Level::Public),
        (Method::GET, "/metrics", Level::Public),
        (Method::GET, "/metrics/prometheus", Level::Public),
        // Regent's: the per-queue families name the tenant's queues.
        (Method::GET, "/api/v1/metrics/queues", Level::Admin),
        // Read-only in the spec; admin here: they span every tenant (docs/metrics.md, "Fleet metrics").
        (
            Method::GET,
            "/api/v1/analytics/system-metrics",
            Level::Admin,
        ),
        (
            Method::GET,
            "/api/v1/analytics/worker-metrics",
            Level::Admin,
        ),
        (
            Method::GET,
            "/api/v1/analytics/postgres-stats",
            Level::Admin,
        ),
        (Method::GET, "/api/v1/status/buffers", Level::ReadOnly),
        (Method::POST, "/api/v1/configure", Level::ReadWrite),
        (Method::POST, "/api/v1/push", Level::ReadWrite),
        (Method::GET, "/api/v1/pop/queue/{queue}", Level::ReadWrite),
        (
            Method::GET,
            "/api/v1/pop/queue/{queue}/partition/{partition}",
            Level::ReadWrite,
        ),
        (Method::GET, "/api/v1/pop", Level::ReadWrite),
        (Method::POST, "/api/v1/ack", Level::ReadWrite),
        (Method::POST, "/api/v1/ack/batch", Level::ReadWrite),
        (Method::POST, "/api/v1/transaction", Level::ReadWrite),
        (
            Method::POST,
            "/api/v1/lease/{lease_id}/extend",
            Level::ReadWrite,
        ),
        (Method::GET, "/api/v1/messages", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/messages/{partition_id}/{transaction_id}",
            Level::ReadOnly,
        ),
        (
            Method::DELETE,
            "/api/v1/messages/{partition_id}/{transaction_id}",
            Level::ReadWrite,
        ),
        (
            Method::POST,
            "/api/v1/messages/{partition_id}/{transaction_id}/retry",
            Level::ReadWrite,
        ),
        (
            Method::POST,
            "/api/v1/messages/{partition_id}/{transaction_id}/dlq",
            Level::ReadWrite,
        ),
        (Method::GET, "/api/v1/dlq", Level::ReadOnly),
        (Method::POST, "/api/v1/dlq/requeue", Level::ReadWrite),
        (Method::POST, "/api/v1/dlq/delete", Level::ReadWrite),
        (Method::GET, "/api/v1/resources/overview", Level::ReadOnly),
        (Method::GET, "/api/v1/resources/queues", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/resources/queues/{queue}",
            Level::ReadOnly,
        ),
        (
            Method::DELETE,
            "/api/v1/resources/queues/{queue}",
            Level::Admin,
        ),
        (Method::GET, "/api/v1/resources/namespaces", Level::ReadOnly),
        (Method::GET, "/api/v1/resources/tasks", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/resources/queues/{queue}/depth",
            Level::ReadOnly,
        ),
        (Method::GET, "/api/v1/resources/partitions", Level::ReadOnly),
        (Method::DELETE, "/api/v1/queues/{queue}/clear", Level::Admin),
        (Method::GET, "/api/v1/status", Level::ReadOnly),
        (Method::GET, "/api/v1/status/queues", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/status/queues/{queue}",
            Level::ReadOnly,
        ),
        (
            Method::GET,
            "/api/v1/status/queues/{queue}/messages",
            Level::ReadOnly,
        ),
        (Method::GET, "/api/v1/status/analytics", Level::ReadOnly),
        (Method::GET, "/api/v1/analytics/queue-lag", Level::ReadOnly),
        (Method::GET, "/api/v1/analytics/queue-ops", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/analytics/queue-parked-replicas",
            Level::ReadOnly,
        ),
        (Method::GET, "/api/v1/analytics/retention", Level::ReadOnly),
        (Method::GET, "/api/v1/consumer-groups", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/consumer-groups/lagging",
            Level::ReadOnly,
        ),
        (
            Method::GET,
            "/api/v1/consumer-groups/{group}",
            Level::ReadOnly,
        ),
        (
            Method::DELETE,
            "/api/v1/consumer-groups/{group}",
            Level::Admin,
        ),
        (
            Method::POST,
            "/api/v1/consumer-groups/{group}/subscription",
            Level::ReadWrite,
        ),
        (
            Method::DELETE,
            "/api/v1/consumer-groups/{group}/queues/{queue}",
            Level::Admin,
        ),
        (
            Method::POST,
            "/api/v1/consumer-groups/{group}/queues/{queue}/seek",
            Level::ReadWrite,
        ),
        (
            Method::POST,
            "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek",
            Level::ReadWrite,
        ),
        (Method::POST, "/api/v1/stats/refresh", Level::Admin),
        (Method::GET, "/api/v1/whoami", Level::ReadOnly),
        (Method::GET, "/api/v1/system/maintenance", Level::Admin),
        (Method::POST, "/api/v1/system/maintenance", Level::Admin),
        (Method::GET, "/api/v1/system/maintenance/pop", Level::Admin),
        (Method::POST, "/api/v1/system/maintenance/pop", Level::Admin),
        (Method::GET, "/api/v1/system/shared-state", Level::Admin),
        (Method::POST, "/api/v1/traces", Level::ReadWrite),
        (Method::GET, "/api/v1/traces/names", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/traces/by-name/{name}",
            Level::ReadOnly,
        ),
        (
            Method::GET,
            "/api/v1/traces/{partition_id}/{transaction_id}",
            Level::ReadOnly,
        ),
        (Method::GET, "/api/v1/openapi.json", Level::Public),
        (Method::POST, "/streams/v1/queries", Level::ReadWrite),
        (Method::POST, "/streams/v1/cycle", Level::ReadWrite),
        (Method::POST, "/streams/v1/state/get", Level::ReadOnly),
        // §18.1: one route carries reads and writes, so it is read-write (the spec's REC).
        (Method::POST, "/api/v1/kv", Level::ReadWrite),
        // Not the spec's: the console's listings of stream queries and their partitions.
        (Method::GET, "/streams/v1/queries", Level::ReadOnly),
        (
            Method::GET,
            "/streams/v1/queries/{query_id}/partitions",
            Level::ReadOnly,
        ),
        // Spec §18.2: the timers; the queues with pending timers is Regent's (the console's).
        (Method::POST, "/api/v1/timers", Level::ReadWrite),
        (
            Method::DELETE,
            "/api/v1/timers/{queue}/{*timer_key}",
            Level::ReadWrite,
        ),
        (
            Method::GET,
            "/api/v1/timers/{queue}/{*timer_key}",
            Level::ReadOnly,
        ),
        (Method::GET, "/api/v1/timers/{queue}", Level::ReadOnly),
        (Method::GET, "/api/v1/timers", Level::ReadOnly),
        // Spec §18.3 (REC: writes read-write, reads read-only); deleting a queue is admin, as
        // deleting a durable queue is.
        (
            Method::POST,
            "/api/v1/ephemeral/configure",
            Level::ReadWrite,
        ),
        (Method::POST, "/api/v1/ephemeral/reset", Level::ReadWrite),
        (
            Method::DELETE,
            "/api/v1/ephemeral/queue/{queue}",
            Level::Admin,
        ),
        (Method::POST, "/api/v1/ephemeral/push", Level::ReadWrite),
        (Method::GET, "/api/v1/ephemeral/pop", Level::ReadWrite),
        (Method::POST, "/api/v1/ephemeral/ack", Level::ReadWrite),
        (Method::GET, "/api/v1/ephemeral/queues", Level::ReadOnly),
        (
            Method::GET,
            "/api/v1/ephemeral/queues/{queue}/depth",
            Level::ReadOnly,
        ),
        // Not the spec's: the web console, public like Queen's dashboard at `/`.
        (Method::GET, "/", Level::Public),
        (Method::GET, "/assets/{*file}", Level::Public),
    ];
    // Each family declares its own routes, so the table's order is the families'; which
    // routes, and at which levels, is what must match.
    let key = |r: &(Method, &str, Level)| (r.0.to_string(), r.1.to_string());
    let mut table: Vec<(Method, &str, Level)> = routes()
        .into_iter()
        .map(|r| (r.method, r.path, r.level))
        .collect();
    table.sort_by_key(key);
    let mut spec = spec;
    spec.sort_by_key(key);
    assert_eq!(
        table, spec,
        "the route table is the spec's, at the spec's levels"
    );
}

/// The methods a route may have: each path of the table must answer exactly its own.
const METHODS: [Method; 5] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
];

/// Whether the router's template `template` takes the concrete `path`: `{name}` takes one
/// segment, `{*name}` the rest (at least one segment), anything else itself.
fn takes(template: &str, path: &str) -> bool {
    let mut path = path.split('/');
    for want in template.split('/') {
        let Some(got) = path.next() else {
            return false;
        };
        if want.starts_with("{*") {
            return !got.is_empty();
        }
        if want.starts_with('{') {
            if got.is_empty() {
                return false;
            }
        } else if want != got {
            return false;
        }
    }
    path.next().is_none()
}

/// Templates next to `template` that the router must not take for it: a segment more, one
/// fewer, another prefix.
fn near(template: &str) -> Vec<String> {
    let mut out = vec![if template == "/" {
        "/extra".to_string()
    } else {
        format!("{template}/extra")
    }];
    if let Some((fewer, _)) = template.rsplit_once('/').filter(|(f, _)| !f.is_empty()) {
        out.push(fewer.to_string());
    }
    out.push(match template.strip_prefix("/api/v1/") {
        Some(rest) => format!("/api/v2/{rest}"),
        None => format!("/x{template}"),
    });
    out
}

/// What the router really serves: the table, and nothing else. At every path of the table,
/// each of its methods is served (not the fallback's 404 or 405) and each other method is
/// refused with 405; HEAD is served wherever GET is (axum runs the GET handler, without the
/// body) and is 405 elsewhere; OPTIONS is CORS's 204 on any path. Paths next to the table's
/// (a segment more, one fewer, another prefix) are 404 for every method.
#[tokio::test]
async fn the_router_serves_exactly_the_route_table() {
    let b = broker_with(|_| {}).await;
    let table = routes();
    let mut templates: Vec<&str> = Vec::new();
    for r in &table {
        if !templates.contains(&r.path) {
            templates.push(r.path);
        }
    }
    let served = |method: &Method, template: &str| {
        table
            .iter()
            .any(|r| r.method == method && r.path == template)
    };
    let not_found = json!({"error": "Not found"});
    let not_allowed = json!({"error": "Method not allowed"});
    for template in &templates {
        let path = path_of(template);
        let mut get = StatusCode::METHOD_NOT_ALLOWED;
        for method in &METHODS {
            let (s, v) = call(&b, method, &path, None).await;
            if served(method, template) {
                assert_ne!(s, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}: {v}");
                assert_ne!(v, not_found, "{method} {path}: {s}");
            } else {
                assert_eq!(
                    (s, &v),
                    (StatusCode::METHOD_NOT_ALLOWED, &not_allowed),
                    "{method} {path}"
                );
            }
            if *method == Method::GET {
                get = s;
            }
        }
        // The GET handler's status (its own 404 for a queue that does not exist, say), or 405.
        let (s, _) = call(&b, &Method::HEAD, &path, None).await;
        assert_eq!(s, get, "HEAD {path}");
        let (s, _) = call(&b, &Method::OPTIONS, &path, None).await;
        assert_eq!(s, StatusCode::NO_CONTENT, "OPTIONS {path}");
    }

    let mut checked = 0;
    for template in &templates {
        for next_to in near(template) {
            let path = path_of(&next_to);
            if templates.iter().any(|t| takes(t, &path)) {
                // Another route's path (`/api/v1/system/maintenance` is one fewer than
                // `.../maintenance/pop`; a wildcard takes a segment more): checked above.
                continue;
            }
            checked += 1;
            for method in &METHODS {
                let (s, v) = call(&b, method, &path, None).await;
                assert_eq!(
                    (s, &v),
                    (StatusCode::NOT_FOUND, &not_found),
                    "{method} {path}, next to {template}"
                );
            }
            let (s, _) = call(&b, &Method::HEAD, &path, None).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "HEAD {path}, next to {template}");
            let (s, _) = call(&b, &Method::OPTIONS, &path, None).await;
            assert_eq!(s, StatusCode::NO_CONTENT, "OPTIONS {path}");
        }
    }
    assert!(
        checked >= 2 * templates.len(),
        "{checked} paths next to {} templates",
        templates.len()
    );
}

#[tokio::test]
async fn every_route_with_every_kind_of_token() {
    let b = authed_broker().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let granting: Vec<(&str, String, Option<Level>)> = vec![
        (
            "read-only",
            token("read-only").tenant("acme").mint(),
            Some(Level::ReadOnly),
        ),
        (
            "read-write",
            token("read-write").tenant("acme").mint(),
            Some(Level::ReadWrite),
        ),
        (
            "admin",
            token("admin").tenant("acme").sub("ops").mint(),
            Some(Level::Admin),
        ),
        (
            "no role",
            signed(Algorithm::HS256, SECRET, None, json!({"sub": "x"})),
            None,
        ),
        (
            "unknown role",
            token("superuser").tenant("acme").expires_in(None).mint(),
            None,
        ),
        (
            "roles array",
            signed(
                Algorithm::HS256,
                SECRET,
                None,
                json!({"roles": ["read-only", "admin"], "tenant": "acme"}),
            ),
            Some(Level::Admin),
        ),
    ];
    let refused: Vec<(&str, Option<String>, &str)> = vec![
        ("none", None, "Authentication required"),
        (
            "expired",
            Some(signed(
                Algorithm::HS256,
                SECRET,
                None,
                json!({"role": "admin", "exp": now - 3600}),
            )),
            "Token has expired",
        ),
        (
            "bad signature",
            Some(
                token("admin")
                    .tenant("acme")
                    .secret("another-secret")
                    .mint(),
            ),
            "Invalid token signature",
        ),
        (
            "wrong algorithm",
            Some(signed(
                Algorithm::HS384,
                SECRET,
                None,
                json!({"role": "admin"}),
            )),
            "Token uses HS384, expected HS256",
        ),
    ];
    let no_tenant = signed(Algorithm::HS256, SECRET, None, json!({"role": "admin"}));
    for r in routes() {
        let (method, need) = (&r.method, &r.level);
        let path = path_of(r.path);
        for (name, token, text) in &refused {
            let (s, v) = call(&b, method, &path, token.as_deref()).await;
            if *need == Level::Public {
                assert!(
                    s != StatusCode::UNAUTHORIZED && s != StatusCode::FORBIDDEN,
                    "{method} {path} {name}: {s} {v}"
                );
            } else {
                assert_eq!(s, StatusCode::UNAUTHORIZED, "{method} {path} {name}: {v}");
                assert_eq!(v, json!({ "error": text }), "{method} {path} {name}");
            }
        }
        for (name, token, has) in &granting {
            let (s, v) = call(&b, method, &path, Some(token)).await;
            let allowed = *need == Level::Public || has.is_some_and(|h| h >= *need);
            if allowed {
                assert!(
                    s != StatusCode::UNAUTHORIZED && s != StatusCode::FORBIDDEN,
                    "{method} {path} with {name}: {s} {v}"
                );
            } else {
                assert_eq!(s, StatusCode::FORBIDDEN, "{method} {path} with {name}: {v}");
                assert_eq!(v, json!({"error": "Insufficient permissions"}));
            }
        }
        // An admin token that names no tenant acts for nobody.
        let (s, v) = call(&b, method, &path, Some(&no_tenant)).await;
        if *need == Level::Public {
            assert_ne!(s, StatusCode::FORBIDDEN, "{method} {path}: {v}");
        } else {
            assert_eq!(s, StatusCode::FORBIDDEN, "{method} {path}: {v}");
            assert_eq!(v, json!({"error": "Token has no tenant: claim `tenant`"}));
        }
    }
}

/// `GET /api/v1/whoami` names the token's tenant, role, subject and expiry (the console
/// hides what the role may not do); with authentication off, the default tenant and
/// nothing refused.
#[tokio::test]
async fn whoami_says_the_tenant_and_role_a_token_acts_as() {
    let b = authed_broker().await;
    for role in ["read-only", "read-write", "admin"] {
        let t = token(role).tenant("acme").sub("ops@acme").mint();
        let (s, v) = call(&b, &Method::GET, "/api/v1/whoami", Some(&t)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (
                &v["authEnabled"],
                &v["tenant"],
                &v["role"],
                &v["verified"],
                &v["sub"]
            ),
            (
                &json!(true),
                &json!("acme"),
                &json!(role),
                &json!(true),
                &json!("ops@acme")
            ),
            "{v}"
        );
        let expires = chrono::DateTime::parse_from_rfc3339(v["expiresAt"].as_str().unwrap());
        let left = expires.unwrap().timestamp() - chrono::Utc::now().timestamp();
        assert!((590..=600).contains(&left), "{v}");
    }
    // The highest of the token's roles is the one it acts as.
    let both = signed(
        Algorithm::HS256,
        SECRET,
        None,
        json!({"role": "read-only", "roles": ["admin"], "tenant": "acme"}),
    );
    let (_, v) = call(&b, &Method::GET, "/api/v1/whoami", Some(&both)).await;
    assert_eq!(
        (&v["role"], &v["expiresAt"]),
        (&json!("admin"), &Value::Null),
        "{v}"
    );
    let (s, _) = call(&b, &Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    let open = broker_with(|_| {}).await;
    let (s, v) = call(&open, &Method::GET, "/api/v1/whoami", None).await;
    assert_eq!(
        (s, v),
        (
            StatusCode::OK,
            json!({"authEnabled": false, "tenant": "default", "role": "admin",
                   "verified": false, "sub": null, "expiresAt": null})
        )
    );
}

#[tokio::test]
async fn tokens_are_read_from_the_header_and_unknown_paths_stay_404() {
    let b = authed_broker().await;
    let admin = token("admin").tenant("acme").mint();
    // Without `Bearer `, the whole header value is the token.
    let res = b
        .http
        .get(format!("{}/api/v1/resources/queues", b.url))
        .header("Authorization", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = b
        .http
        .get(format!("{}/api/v1/resources/queues", b.url))
        .header("Authorization", "Bearer ")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let (s, _) = call(&b, &Method::GET, "/api/v1/nowhere", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // A granted push really happens.
    let rw = token("read-write").tenant("acme").mint();
    let res = b
        .http
        .post(format!("{}/api/v1/push", b.url))
        .header("Authorization", format!("bearer {rw}"))
        .json(&json!({"items": [{"queue": "authq", "payload": {"n": 1}}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let (s, v) = call(&b, &Method::GET, "/api/v1/pop/queue/authq", Some(&rw)).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["messages"][0]["data"], json!({"n": 1}), "{v}");
}

#[tokio::test]
async fn producer_sub_is_the_tokens_subject_never_the_clients() {
    let b = authed_broker().await;
    let alice = token("read-write").tenant("acme").sub("alice").mint();
    let bob = token("read-write").tenant("acme").sub("bob").mint();
    let nobody = token("read-write").tenant("acme").mint();
    let send = |token: String, path: &'static str, body: Value| {
        let req = b
            .http
            .post(format!("{}{path}", b.url))
            .header("Authorization", format!("Bearer {token}"))
            .json(&body);
        async move {
            let res = req.send().await.unwrap();
            (res.status(), res.json::<Value>().await.unwrap())
        }
    };
    let (s, v) = send(
        alice,
        "/api/v1/push",
        json!({"items": [{"queue": "subs", "partition": "a", "transactionId": "t1",
                          "payload": {"n": 1}, "producerSub": "mallory"}]}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = send(
        bob,
        "/api/v1/transaction",
        json!({"operations": [{"type": "push", "items": [
            {"queue": "subs", "partition": "b", "transactionId": "t2", "payload": {"n": 2},
             "producerSub": "mallory"}]}]}),
    )
    .await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)), "{v}");
    let (s, v) = send(
        nobody.clone(),
        "/api/v1/push",
        json!({"items": [{"queue": "subs", "partition": "c", "transactionId": "t3",
                          "payload": {"n": 3}, "producerSub": "mallory"}]}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    for (partition, want) in [
        ("a", json!("alice")),
        ("b", json!("bob")),
        ("c", Value::Null),
    ] {
        let (s, v) = call(
            &b,
            &Method::GET,
            &format!("/api/v1/pop/queue/subs/partition/{partition}"),
            Some(&nobody),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["messages"][0]["producerSub"], want, "{partition}: {v}");
    }
}

/// A verified token's `sub` is copied into every message it pushes. One of 64 KiB once
/// panicked the push flushers (the frame has a 16-bit length), and every later push answered
/// 503 until a restart while `/health` said 200. It is refused with 401 now, at the edge, and
/// the broker goes on pushing; the longest accepted `sub` is stored whole.
#[tokio::test]
async fn an_oversized_subject_is_refused_and_the_broker_keeps_pushing() {
    let b = authed_broker().await;
    let push = |token: String, txid: &'static str| {
        let body = json!({"items": [{"queue": "subs", "transactionId": txid, "payload": {}}]});
        let b = &b;
        async move {
            let body = body.to_string();
            b.request_as(Some(&token), Method::POST, "/api/v1/push", Some(&body))
                .await
        }
    };
    let huge = "s".repeat(64 * 1024);
    for _ in 0..3 {
        let (s, v) = push(token("read-write").tenant("acme").sub(&huge).mint(), "huge").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
        assert_eq!(
            v,
            json!({"error": "Token subject (sub) is 65536 bytes; at most 1024 are accepted"})
        );
    }
    let longest = "l".repeat(regent::http::auth::MAX_SUB_BYTES);
    let (s, v) = push(
        token("read-write").tenant("acme").sub(&longest).mint(),
        "longest",
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v[0]["status"], "queued", "{v}");
    let (s, v) = push(
        token("read-write").tenant("acme").sub("after").mint(),
        "after",
    )
    .await;
    assert_eq!(
        (s, &v[0]["status"]),
        (StatusCode::CREATED, &json!("queued")),
        "{v}"
    );
    let reader = token("read-write").tenant("acme").mint();
    let (s, v) = call(
        &b,
        &Method::GET,
        "/api/v1/pop/queue/subs?batch=10",
        Some(&reader),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let subs: Vec<&str> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["producerSub"].as_str().unwrap())
        .collect();
    assert_eq!(subs, [longest.as_str(), "after"]);
    let (s, v) = call(&b, &Method::GET, "/health", None).await;
    assert_eq!(
        (s, &v["status"]),
        (StatusCode::OK, &json!("healthy")),
        "{v}"
    );
}

/// A configured issuer and audience are required, not only compared when present; time
/// claims must be numbers, and a token may not be issued in the future.
#[tokio::test]
async fn issuer_audience_and_time_claims_are_enforced() {
    let b = authed_broker_with(|c| {
        c.jwt_issuer = Some("idp".into());
        c.jwt_audience = Some("regent".into());
    })
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let with = |extra: Value| {
        let mut claims = json!({"role": "admin", "tenant": "acme", "iss": "idp", "aud": "regent"});
        for (k, v) in extra.as_object().unwrap() {
            match v {
                Value::Null => claims.as_object_mut().unwrap().remove(k),
                v => claims.as_object_mut().unwrap().insert(k.clone(), v.clone()),
            };
        }
        signed(Algorithm::HS256, SECRET, None, claims)
    };
    let path = "/api/v1/resources/queues";
    for (name, token, want) in [
        ("no iss", with(json!({"iss": null})), "Invalid token issuer"),
        (
            "iss array",
            with(json!({"iss": ["evil", "idp"]})),
            "Invalid token issuer",
        ),
        (
            "iss number",
            with(json!({"iss": 5})),
            "Invalid token issuer",
        ),
        (
            "no aud",
            with(json!({"aud": null})),
            "Invalid token audience",
        ),
        (
            "aud number",
            with(json!({"aud": 5})),
            "Invalid token audience",
        ),
        (
            "other aud",
            with(json!({"aud": ["billing"]})),
            "Invalid token audience",
        ),
        (
            "string exp",
            with(json!({"exp": (now + 600).to_string()})),
            "Token verification failed: exp is not a number",
        ),
        (
            "future iat",
            with(json!({"iat": now + 3600})),
            "Token verification failed: issued in the future",
        ),
    ] {
        let (s, v) = call(&b, &Method::GET, path, Some(&token)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{name}: {v}");
        assert_eq!(v, json!({ "error": want }), "{name}");
    }
    for (name, token) in [
        ("exact", with(json!({}))),
        ("aud array", with(json!({"aud": ["billing", "regent"]}))),
        (
            "iat within the leeway",
            with(json!({"iat": now + 10, "exp": now + 600})),
        ),
    ] {
        let (s, v) = call(&b, &Method::GET, path, Some(&token)).await;
        assert_eq!(s, StatusCode::OK, "{name}: {v}");
    }
}
