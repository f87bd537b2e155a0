//! Numbers at their extremes (issue 47): every number of every route's example request (the
//! bodies and query strings the route table declares for the fuzzer) is sent again with each
//! of `NUMERIC_EXTREMES` in its place, to a real broker on a real database. Whatever the
//! number, the answer is never a 5xx and never PostgreSQL's own text: a number that reaches
//! time arithmetic or a column is bounded before any SQL, and refused by name past its bound.
//! Then every queue option and ephemeral option at its bounds still leaves a queue that
//! takes pushes, pops and acks.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use regent::http::fuzz_targets::{targets, uri, Input, NUMERIC_EXTREMES};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{broker, Broker};

/// What PostgreSQL says of a number it cannot take; none of it may reach a client.
const DATABASE_TEXTS: [&str; 7] = [
    "out of range",
    "invalid input syntax",
    "overflow",
    "violates",
    "syntax error",
    "SQLSTATE",
    "db error",
];

/// A long-poll parks until its timeout: one still parked after this is left, not judged.
const PATIENCE: Duration = Duration::from_secs(5);

/// Stands in for the number in the written body, then is replaced by the number's raw text
/// (which `serde_json::Value` cannot hold: `1e400`).
const MARK: &str = "\u{1}extreme\u{1}";

/// One request of the sweep.
#[derive(Clone, Debug)]
struct Probe {
    method: Method,
    path: String,
    body: Option<String>,
}

/// JSON pointers to every number of `v` (and every string that is one: options may come
/// as numeric strings).
fn numbers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(at),
        Value::String(s) if s.parse::<f64>().is_ok() => out.push(at),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers(x, format!("{at}/{i}"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let k = k.replace('~', "~0").replace('/', "~1");
                numbers(x, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// The number's raw text in a JSON body: `NaN` goes as a string (JSON has no NaN).
fn in_json(n: &str) -> String {
    if n == "NaN" {
        "\"NaN\"".into()
    } else {
        n.into()
    }
}

/// Each body seed with each of its numbers replaced by each extreme.
fn body_probes(method: &Method, template: &str, seed: &str) -> Vec<Probe> {
    let Ok(v) = serde_json::from_str::<Value>(seed) else {
        return Vec::new();
    };
    let mut at = Vec::new();
    numbers(&v, String::new(), &mut at);
    // A body route's path parameters, if any, name plain things.
    let path = String::from_utf8(uri(template, b"q/q")).expect("ascii");
    let mut out = Vec::new();
    for pointer in at {
        for n in NUMERIC_EXTREMES {
            let mut varied = v.clone();
            *varied.pointer_mut(&pointer).expect("found above") = json!(MARK);
            let text = varied
                .to_string()
                .replace(&format!("\"{MARK}\""), &in_json(n));
            out.push(Probe {
                method: method.clone(),
                path: path.clone(),
                body: Some(text),
            });
        }
    }
    out
}

/// Each query seed with each of its numeric parameters replaced by each extreme.
fn query_probes(method: &Method, template: &str, seed: &str) -> Vec<Probe> {
    let Some((segments, query)) = seed.split_once('?') else {
        return Vec::new();
    };
    let pairs: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
    let mut out = Vec::new();
    for (i, (_, value)) in pairs.iter().enumerate() {
        if value.parse::<f64>().is_err() {
            continue;
        }
        for n in NUMERIC_EXTREMES {
            let q: Vec<String> = pairs
                .iter()
                .enumerate()
                .map(|(j, (k, v))| format!("{k}={}", if i == j { n } else { v }))
                .collect();
            let input = format!("{segments}?{}", q.join("&"));
            out.push(Probe {
                method: method.clone(),
                path: String::from_utf8(uri(template, input.as_bytes())).expect("ascii"),
                body: None,
            });
        }
    }
    out
}

/// Every probe of every route the table declares.
fn probes() -> Vec<Probe> {
    let mut out = Vec::new();
    for t in targets() {
        let Some((method, template)) = t.routes.first().cloned() else {
            continue;
        };
        for seed in &t.seeds {
            out.extend(match t.input {
                Input::Body => body_probes(&method, template, seed),
                Input::Route { .. } => query_probes(&method, template, seed),
            });
        }
    }
    out
}

/// What is wrong with the answer to `p`, if anything.
async fn judge(b: &Broker, p: &Probe) -> Option<String> {
    let mut req = b
        .http
        .request(p.method.clone(), format!("{}{}", b.url, p.path))
        .timeout(PATIENCE);
    if let Some(body) = &p.body {
        req = req
            .header("content-type", "application/json")
            .body(body.clone());
    }
    let res = match req.send().await {
        Ok(res) => res,
        // A long-poll waiting out a long timeout is what it was asked to do.
        Err(e) if e.is_timeout() => return None,
        Err(e) => return Some(format!("{e}")),
    };
    let status = res.status();
    let text = res.text().await.unwrap_or_default();
    if status.is_server_error() {
        return Some(format!("{status}: {text}"));
    }
    if status.is_client_error() {
        if let Some(t) = DATABASE_TEXTS.iter().find(|t| text.contains(*t)) {
            return Some(format!("{status} with the database's text ({t:?}): {text}"));
        }
    }
    None
}

#[tokio::test]
async fn every_number_of_every_route_at_its_extremes_is_answered_without_a_5xx_or_database_text() {
    let b = broker().await;
    // Something to find: a queue with a message, a timer, a key.
    b.push("orders", "Default", &["o-1"]).await;
    let all = probes();
    assert!(
        all.len() > 500,
        "only {} probes: the seeds lost their numbers",
        all.len()
    );
    let problems: Vec<String> = stream::iter(all)
        .map(|p| {
            let b = &b;
            async move {
                judge(b, &p).await.map(|why| {
                    format!(
                        "{} {} {}\n    -> {why}",
                        p.method,
                        p.path,
                        p.body.unwrap_or_default()
                    )
                })
            }
        })
        .buffer_unordered(8)
        .filter_map(|x| async { x })
        .collect()
        .await;
    assert!(
        problems.is_empty(),
        "{} answers went wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The broker still serves.
    let (s, _) = b.get("/health").await;
    assert_eq!(s, StatusCode::OK);
}

/// Panics unless `(status, body)` is a success.
fn ok(what: &str, (s, v): (StatusCode, Value)) -> Value {
    assert!(s.is_success(), "{what}: {s} {v}");
    v
}

/// Every queue option at the ends of its range is stored, and the queue still takes a push,
/// a pop, an ack, a retention pass, a stats round and its views: no stored number breaks it.
#[tokio::test]
async fn every_queue_option_at_its_bounds_leaves_a_queue_that_works() {
    let b = broker().await;
    const NON_NEGATIVE: [&str; 4] = [
        "leaseTime",
        "retryLimit",
        "delayedProcessing",
        "windowBuffer",
    ];
    for (option, _) in regent::rules::options::INT_DEFAULTS {
        let low = if NON_NEGATIVE.contains(&option) {
            0
        } else {
            i32::MIN as i64
        };
        for (end, n) in [("max", i32::MAX as i64), ("min", low)] {
            let q = format!("{option}-{end}");
            let options = json!({option: n, "retentionEnabled": true});
            let v = b.configure(&q, options).await;
            assert_eq!(v["options"][option], n, "{q}: {v}");
            b.push(&q, "Default", &[&format!("{q}-1")]).await;
            let popped = b.pop(&q, "batch=10").await;
            if !Broker::txids(&popped).is_empty() {
                b.ack_all(None, &popped).await;
            }
            ok(&q, b.get(&format!("/api/v1/resources/queues/{q}")).await);
            ok(&q, b.get(&format!("/api/v1/status/queues/{q}")).await);
            ok(
                &q,
                b.get(&format!("/api/v1/status/queues/{q}/messages")).await,
            );
        }
    }
    b.retention_pass().await;
    b.refresh_stats().await;
    ok("status", b.get("/api/v1/status/queues").await);
    ok(
        "lagging",
        b.get("/api/v1/consumer-groups/lagging?minLagSeconds=0")
            .await,
    );
    // One past the range is refused by name, before anything is stored.
    for (option, _) in regent::rules::options::INT_DEFAULTS {
        for n in [i32::MAX as i64 + 1, i32::MIN as i64 - 1] {
            let (s, v) = b
                .post(
                    "/api/v1/configure",
                    json!({"queue": "past", "options": {option: n}}),
                )
                .await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{option} {n}: {v}");
            let e = v["error"].as_str().unwrap();
            assert!(
                e.starts_with(option) && e.contains("2147483647")
                    || e.ends_with("must not be negative"),
                "{e}"
            );
        }
    }
    let (s, v) = b.get("/api/v1/resources/queues/past").await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "a refused configure created the queue: {v}"
    );
}

/// Every ephemeral option at the most and the least a client can send is clamped to its
/// bound (as Queen clamps), and the queue still takes a push, a pop, an ack and a depth.
#[tokio::test]
async fn every_ephemeral_option_at_its_extremes_leaves_a_queue_that_works() {
    let b = broker().await;
    for option in [
        "maxBytes",
        "maxLength",
        "ttlSeconds",
        "leaseSeconds",
        "retryLimit",
        "windowBuffer",
    ] {
        for (end, n) in [("max", i64::MAX), ("min", i64::MIN)] {
            let q = format!("{option}-{end}");
            let value = match option {
                "windowBuffer" => json!({"ms": n, "count": n}),
                _ => json!(n),
            };
            let v = ok(
                &q,
                b.post(
                    "/api/v1/ephemeral/configure",
                    json!({"queue": q, "options": {option: value}}),
                )
                .await,
            );
            if option == "ttlSeconds" && end == "max" {
                assert_eq!(
                    v["options"]["ttlSeconds"],
                    regent::rules::bounds::MAX_SPAN_SECONDS,
                    "{v}"
                );
            }
            ok(
                &q,
                b.post(
                    "/api/v1/ephemeral/push",
                    json!({"queue": q, "messages": [{"payload": 1}]}),
                )
                .await,
            );
            let popped = ok(
                &q,
                b.get(&format!("/api/v1/ephemeral/pop?queue={q}&batch=10"))
                    .await,
            );
            let ids: Vec<Value> = popped["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| json!({"id": m["id"], "status": "completed"}))
                .collect();
            // A queue bounded to one byte holds nothing; any other delivers what was pushed.
            if !(option == "maxBytes" && end == "min") {
                assert_eq!(ids.len(), 1, "{q}: {popped}");
            }
            ok(
                &q,
                b.post("/api/v1/ephemeral/ack", json!({"queue": q, "acks": ids}))
                    .await,
            );
            ok(
                &q,
                b.get(&format!("/api/v1/ephemeral/queues/{q}/depth")).await,
            );
        }
    }
    ok("listing", b.get("/api/v1/ephemeral/queues").await);
}

/// A key/value expiry at its bound is a timestamp RFC 3339 can write; one past it is
/// refused by name, as the op's field.
#[tokio::test]
async fn a_kv_expiry_at_its_bound_is_a_timestamp_and_past_it_is_refused_by_name() {
    let b = broker().await;
    let max = regent::rules::bounds::MAX_SPAN_SECONDS;
    let put = |ttl: i64| json!({"operations": [{"op": "put", "ns": "n", "key": "k", "value": 1, "ttlSeconds": ttl}]});
    let v = ok("at the bound", b.post("/api/v1/kv", put(max)).await);
    let at = v["results"][0]["expiresAt"].as_str().unwrap().to_string();
    assert!(
        chrono::DateTime::parse_from_rfc3339(&at).is_ok(),
        "{at} is not RFC 3339"
    );
    for ttl in [max + 1, 1_000_000_000_000, i64::MAX] {
        let (s, v) = b.post("/api/v1/kv", put(ttl)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
        assert_eq!(
            v["error"],
            format!("operations[0].ttlSeconds must be between 1 and {max}"),
            "{v}"
        );
    }
}

/// A queue whose stored options hold spans past today's bounds (written before configure
/// refused them, or by hand) still serves: the spans are read at their bound.
#[tokio::test]
async fn stored_options_past_their_bounds_are_read_at_them() {
    let b = broker().await;
    b.configure("old", json!({"retentionEnabled": true})).await;
    let far = i64::MAX;
    b.db()
        .await
        .execute(
            "UPDATE queues SET options = options || jsonb_build_object(
                 'leaseTime', $1::bigint, 'retentionSeconds', $1::bigint,
                 'completedRetentionSeconds', $1::bigint, 'maxWaitTimeSeconds', $1::bigint)
              WHERE name = 'old'",
            &[&far],
        )
        .await
        .unwrap();
    b.push("old", "Default", &["o-1"]).await;
    let popped = b.pop("old", "batch=10").await;
    assert_eq!(Broker::txids(&popped), vec!["o-1"], "{popped}");
    b.ack_all(None, &popped).await;
    b.retention_pass().await;
    ok("the queue", b.get("/api/v1/resources/queues/old").await);
}
