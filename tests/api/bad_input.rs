//! Bad input: every malformed request gets a clear 4xx with the spec's `{"error": ...}` text
//! (never a panic, never a 500 for a client mistake), and a rejected request writes nothing.
//! Also the odd-but-legal inputs (unicode names, percent-encoded paths, every payload shape)
//! that must round-trip unchanged.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{broker, broker_with, Broker};

// ---------------------------------------------------------------------------------------------
// helpers

/// Row counts of every table a request can write, in a fixed order.
const TABLES: [&str; 7] = [
    "queues",
    "partitions",
    "segments",
    "tx_index",
    "cursors",
    "subscriptions",
    "dead_letters",
];

async fn counts(b: &Broker) -> Vec<(&'static str, i64)> {
    let db = b.db().await;
    let mut out = Vec::new();
    for t in TABLES {
        let n: i64 = db
            .query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .await
            .unwrap()
            .get(0);
        out.push((t, n));
    }
    out
}

/// Panics unless no table holds a single row.
async fn assert_nothing_written(b: &Broker, what: &str) {
    let c = counts(b).await;
    assert!(
        c.iter().all(|(_, n)| *n == 0),
        "{what}: a rejected request wrote rows: {c:?}"
    );
}

/// What a rejected request must say.
#[derive(Clone, Copy, Debug)]
enum Text<'a> {
    /// The `error` text exactly.
    Exact(&'a str),
    /// The `error` text starts with this and carries a non-empty detail after it.
    Prefix(&'a str),
    /// Any non-empty `error` text (the spec names none).
    Any,
}

fn check_error(label: &str, got: (StatusCode, &Value), status: StatusCode, text: Text<'_>) {
    let (s, v) = got;
    assert_eq!(s, status, "{label}: status (body {v})");
    let err = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{label}: no {{\"error\": <string>}} envelope in {v}"));
    match text {
        Text::Exact(t) => assert_eq!(err, t, "{label}: error text"),
        Text::Prefix(p) => assert!(
            err.starts_with(p) && err.len() > p.len(),
            "{label}: error {err:?} should be {p:?} followed by a detail"
        ),
        Text::Any => assert!(!err.is_empty(), "{label}: empty error text"),
    }
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved bytes).
fn seg(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (c as char).to_string()
            }
            _ => format!("%{c:02X}"),
        })
        .collect()
}

/// Sends a body-less request and checks for one of `allowed` with CORS headers and a JSON
/// `{"error": "<non-empty>"}` body; the error describes what came back instead.
async fn json_4xx(b: &Broker, method: Method, path: &str, allowed: &[u16]) -> Result<(), String> {
    let res = b
        .http
        .request(method.clone(), format!("{}{path}", b.url))
        .send()
        .await
        .unwrap();
    let s = res.status();
    let label = format!("{method} {path}");
    let cors = res
        .headers()
        .get("access-control-allow-origin")
        .map(|h| h.to_str().unwrap().to_string());
    let text = res.text().await.unwrap();
    let envelope = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["error"].as_str().map(|e| !e.is_empty()))
        .unwrap_or(false);
    if !allowed.contains(&s.as_u16()) || !envelope || cors.as_deref() != Some("*") {
        return Err(format!(
            "{label}: got {s}, body {text:?}, CORS origin {cors:?}; want one of {allowed:?} \
             with a JSON {{\"error\": ...}} body"
        ));
    }
    Ok(())
}

const LEASE_PATH: &str = "/api/v1/lease/0190f3f4-7a1b-7c3d-8e4f-5a6b7c8d9e0f/extend";

// ---------------------------------------------------------------------------------------------
// 1. bodies that are not what a route reads

#[tokio::test]
async fn every_post_route_refuses_empty_unparsable_and_non_object_bodies() {
    let b = broker().await;
    let empties = ["", "   \n\t "];
    let garbage = [
        "not json",
        "{",
        "{\"items\": [}",
        "{\"queue\": \"q\"} trailing",
        "{'queue': 'q'}",
        "\u{feff}{}",
    ];
    let non_objects = ["[]", "[1, 2]", "\"hello\"", "42", "true", "null"];

    // (route, empty text, garbage text, non-object text)
    let routes: [(&str, Text, Text, Text); 5] = [
        (
            "/api/v1/configure",
            Text::Exact("Empty request body"),
            Text::Prefix("Invalid JSON: "),
            Text::Exact("queue is required"),
        ),
        (
            "/api/v1/push",
            Text::Exact("Empty request body"),
            Text::Prefix("Invalid JSON: "),
            Text::Exact("items array is required"),
        ),
        (
            "/api/v1/transaction",
            Text::Exact("Empty request body"),
            Text::Prefix("Invalid JSON: "),
            Text::Exact("operations array required"),
        ),
        (
            "/api/v1/ack",
            Text::Prefix("bad body: "),
            Text::Prefix("bad body: "),
            Text::Prefix("bad body: "),
        ),
        (
            "/api/v1/ack/batch",
            Text::Prefix("bad body: "),
            Text::Prefix("bad body: "),
            Text::Exact("bad body: acknowledgments array is required"),
        ),
    ];
    for (route, empty, bad, non_object) in routes {
        for body in empties {
            let (s, v) = b.post_raw(route, body).await;
            check_error(
                &format!("POST {route} with body {body:?}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                empty,
            );
        }
        // A POST without any body at all (no Content-Type, Content-Length: 0).
        let (s, v) = b.request(Method::POST, route, None).await;
        check_error(
            &format!("POST {route} with no body"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            empty,
        );
        for body in garbage {
            let (s, v) = b.post_raw(route, body).await;
            check_error(
                &format!("POST {route} with body {body:?}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                bad,
            );
        }
        for body in non_objects {
            let (s, v) = b.post_raw(route, body).await;
            check_error(
                &format!("POST {route} with body {body}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                non_object,
            );
        }
    }

    // Lease extend: unparsable JSON is Queen's text; an array, string or number is not the
    // `{"seconds": n}` object the route reads (the spec names no text for it).
    for body in garbage {
        let (s, v) = b.post_raw(LEASE_PATH, body).await;
        check_error(
            &format!("POST lease extend with body {body:?}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Prefix("Invalid JSON: "),
        );
    }
    assert_nothing_written(&b, "empty/garbage bodies").await;
    let mut failures = Vec::new();
    for body in ["[]", "[1, 2]", "\"hello\"", "42", "true"] {
        let (s, v) = b.post_raw(LEASE_PATH, body).await;
        if s != StatusCode::BAD_REQUEST || v["error"].as_str().is_none_or(|e| e.is_empty()) {
            failures.push(format!(
                "POST lease extend with non-object body {body}: got {s} {v}, want 400 {{\"error\": ...}}"
            ));
        }
    }
    assert_nothing_written(&b, "non-object bodies").await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn bodies_that_are_not_utf8_or_nest_too_deep_are_invalid_json() {
    let b = broker().await;
    for route in ["/api/v1/configure", "/api/v1/push", "/api/v1/transaction"] {
        let res = b
            .http
            .post(format!("{}{route}", b.url))
            .header("content-type", "application/json")
            .body(vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}'])
            .send()
            .await
            .unwrap();
        let s = res.status();
        let v: Value =
            serde_json::from_str(&res.text().await.unwrap()).expect("the error is a JSON envelope");
        check_error(
            &format!("POST {route} with invalid UTF-8"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Prefix("Invalid JSON: "),
        );
    }
    // Far deeper than any parser's recursion limit: a 400, not a stack overflow.
    let deep = format!(
        "{{\"items\": [{{\"queue\": \"q\", \"payload\": {}{}}}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let (s, v) = b.post_raw("/api/v1/push", &deep).await;
    check_error(
        "push with 100000-deep payload",
        (s, &v),
        StatusCode::BAD_REQUEST,
        Text::Prefix("Invalid JSON: "),
    );
    assert_nothing_written(&b, "invalid UTF-8 / too deep").await;
    // The broker is still alive.
    let (s, _) = b.get("/health").await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn the_content_type_header_is_never_checked() {
    let b = broker().await;
    let body = json!({"items": [{"queue": "ct", "transactionId": "ct1", "payload": {"n": 1}}]})
        .to_string();
    let plain = b
        .http
        .post(format!("{}/api/v1/push", b.url))
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::CREATED);
    let none = b
        .http
        .post(format!("{}/api/v1/push", b.url))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), StatusCode::CREATED);
    let v: Value = none.json().await.unwrap();
    assert_eq!(v[0]["status"], "duplicate", "{v}");
}

// ---------------------------------------------------------------------------------------------
// 1b. wrong types per field

#[tokio::test]
async fn push_refuses_wrong_field_types_all_or_nothing() {
    let b = broker().await;
    let good = |n: i64| json!({"queue": "good", "partition": "p", "payload": {"n": n}});

    // Top level.
    for body in [
        json!({}),
        json!({"items": null}),
        json!({"items": {}}),
        json!({"items": "x"}),
        json!({"items": 1}),
        json!({"Items": [good(1)]}),
        json!({"item": [good(1)]}),
    ] {
        let (s, v) = b.post("/api/v1/push", body.clone()).await;
        check_error(
            &format!("push {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Exact("items array is required"),
        );
    }

    // Per item: the spec's texts.
    let uuid = "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23";
    let cases: Vec<(Value, &str)> = vec![
        (json!({"payload": 1}), "Queue must be a string"),
        (json!({"queue": null}), "Queue must be a string"),
        (json!({"queue": 5}), "Queue must be a string"),
        (json!({"queue": true}), "Queue must be a string"),
        (json!({"queue": ["q"]}), "Queue must be a string"),
        (json!({"queue": {"name": "q"}}), "Queue must be a string"),
        (json!(5), "Queue must be a string"),
        (json!("q"), "Queue must be a string"),
        (json!(null), "Queue must be a string"),
        (json!([]), "Queue must be a string"),
        (
            json!({"queue": "q", "partition": 5}),
            "Partition must be a string",
        ),
        (
            json!({"queue": "q", "partition": false}),
            "Partition must be a string",
        ),
        (
            json!({"queue": "q", "partition": ["p"]}),
            "Partition must be a string",
        ),
        (
            json!({"queue": "q", "partition": {}}),
            "Partition must be a string",
        ),
        (
            json!({"queue": "q", "transactionId": 5}),
            "TransactionId must be a string",
        ),
        (
            json!({"queue": "q", "transactionId": true}),
            "TransactionId must be a string",
        ),
        (
            json!({"queue": "q", "transactionId": ["t"]}),
            "TransactionId must be a string",
        ),
        (
            json!({"queue": "q", "transactionId": {}}),
            "TransactionId must be a string",
        ),
        (
            json!({"queue": "q", "traceId": 5}),
            "TraceId must be a string",
        ),
        (
            json!({"queue": "q", "traceId": true}),
            "TraceId must be a string",
        ),
        (
            json!({"queue": "q", "traceId": [uuid]}),
            "TraceId must be a string",
        ),
        (
            json!({"queue": "q", "traceId": {"id": uuid}}),
            "TraceId must be a string",
        ),
        (
            json!({"queue": "q", "traceId": "not-a-uuid"}),
            "TraceId must be a UUID",
        ),
        (
            json!({"queue": "q", "traceId": "1234"}),
            "TraceId must be a UUID",
        ),
        (
            json!({"queue": "q", "traceId": format!("{uuid}x")}),
            "TraceId must be a UUID",
        ),
    ];
    for (item, text) in &cases {
        // Alone, first, in the middle, last: the whole request is refused.
        for items in [
            vec![item.clone()],
            vec![item.clone(), good(1), good(2)],
            vec![good(1), item.clone(), good(2)],
            vec![good(1), good(2), item.clone()],
        ] {
            let body = json!({ "items": items });
            let (s, v) = b.post("/api/v1/push", body.clone()).await;
            check_error(
                &format!("push {body}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                Text::Exact(text),
            );
        }
    }
    // An empty queue name is not refused: Queen 0.15 takes it as a name
    // (tests/api/queen_compat.rs).
    assert_nothing_written(&b, "push with bad items").await;

    // Control: the good items alone are stored, and the legal "absent" spellings work.
    let (s, v) = b
        .post(
            "/api/v1/push",
            json!({"items": [
                good(1), good(2),
                {"queue": "good", "partition": null, "transactionId": null, "traceId": null},
                {"queue": "good", "partition": "", "transactionId": "", "traceId": ""},
                {"queue": "good", "traceId": uuid},
            ]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "queued"));
    let (s, v) = b.post("/api/v1/push", json!({"items": []})).await;
    assert_eq!((s, v), (StatusCode::CREATED, json!([])));
}

#[tokio::test]
async fn configure_refuses_wrong_field_types() {
    let b = broker().await;
    for body in [
        json!({}),
        json!({"options": {"leaseTime": 30}}),
        json!({"queue": null}),
        json!({"queue": 5}),
        json!({"queue": true}),
        json!({"queue": ["q"]}),
        json!({"queue": {"name": "q"}}),
        json!({"Queue": "q"}),
        json!({"name": "q"}),
    ] {
        let (s, v) = b.post("/api/v1/configure", body.clone()).await;
        check_error(
            &format!("configure {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Exact("queue is required"),
        );
    }

    let ints = [
        "leaseTime",
        "retryLimit",
        "retryDelay",
        "maxSize",
        "ttl",
        "priority",
        "delayedProcessing",
        "windowBuffer",
        "retentionSeconds",
        "completedRetentionSeconds",
        "maxWaitTimeSeconds",
    ];
    let bools = [
        "deadLetterQueue",
        "dlqAfterMaxRetries",
        "retentionEnabled",
        "encryptionEnabled",
    ];
    for k in ints {
        for bad in [
            json!("abc"),
            json!("12abc"),
            json!(true),
            json!(1.5),
            json!([1]),
            json!({"v": 1}),
        ] {
            let body = json!({"queue": "q", "options": { k: bad }});
            let (s, v) = b.post("/api/v1/configure", body.clone()).await;
            let text = format!("{k} must be an integer");
            check_error(
                &format!("configure {body}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                Text::Exact(&text),
            );
        }
    }
    for k in bools {
        for bad in [
            json!(3),
            json!("yes"),
            json!("TRUE"),
            json!([true]),
            json!({}),
        ] {
            let body = json!({"queue": "q", "options": { k: bad }});
            let (s, v) = b.post("/api/v1/configure", body.clone()).await;
            let text = format!("{k} must be a boolean");
            check_error(
                &format!("configure {body}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                Text::Exact(&text),
            );
        }
    }
    // One bad option among good ones still refuses the whole request.
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "q", "options": {"leaseTime": 30, "retryLimit": 2, "ttl": "soon"}}),
        )
        .await;
    check_error(
        "configure with one bad option",
        (s, &v),
        StatusCode::BAD_REQUEST,
        Text::Exact("ttl must be an integer"),
    );
    // `options` that is not an object (the spec names no text).
    for bad in [json!("x"), json!([]), json!(5)] {
        let (s, v) = b
            .post("/api/v1/configure", json!({"queue": "q", "options": bad}))
            .await;
        check_error(
            &format!("configure with options {bad}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Any,
        );
    }
    assert_nothing_written(&b, "configure with bad fields").await;

    // Control: Queen's lenient spellings are accepted: numeric strings, null options,
    // non-string namespace/task read as absent.
    let (s, v) = b
        .post(
            "/api/v1/configure",
            json!({"queue": "q", "namespace": 5, "task": {"x": 1},
                   "options": {"leaseTime": "45", "retryLimit": null, "deadLetterQueue": "false"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["options"]["leaseTime"], 45);
    assert_eq!(v["options"]["retryLimit"], 3);
    assert_eq!(v["options"]["deadLetterQueue"], false);
    assert_eq!(
        (v["namespace"].as_str(), v["task"].as_str()),
        (Some(""), Some(""))
    );
}

#[tokio::test]
async fn lease_extend_refuses_bad_seconds_and_reads_an_empty_body_as_empty_object() {
    let b = broker().await;
    for bad in [
        json!(0),
        json!(-1),
        json!(-3600),
        json!("abc"),
        json!(1.5),
        json!(true),
        json!([30]),
        json!({"s": 30}),
    ] {
        let body = json!({ "seconds": bad });
        let (s, v) = b.post(LEASE_PATH, body.clone()).await;
        check_error(
            &format!("lease extend {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Exact("seconds must be a positive integer"),
        );
    }
    // Empty bodies are `{}`: an unknown lease is a 200 business answer.
    for body in [None, Some(""), Some("  \n")] {
        let (s, v) = b.request(Method::POST, LEASE_PATH, body).await;
        assert_eq!(s, StatusCode::OK, "empty body {body:?}: {v}");
        assert_eq!(v["success"], false, "{v}");
        assert_eq!(v["error"], "Lease not found", "{v}");
        assert_eq!(v["renewed"], 0, "{v}");
        assert_eq!(v["newExpiresAt"], Value::Null, "{v}");
    }
    assert_nothing_written(&b, "lease extend").await;

    // On a live lease, an empty body renews by the default, and a huge value is clamped
    // rather than refused or overflowing.
    b.push("lq", "Default", &["a"]).await;
    let pop = b.pop("lq", "").await;
    let lease = pop["leaseId"].as_str().unwrap().to_string();
    let path = format!("/api/v1/lease/{lease}/extend");
    let (s, v) = b.request(Method::POST, &path, None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true, "{v}");
    assert!(v["newExpiresAt"].as_str().is_some(), "{v}");
    for huge in [json!(9_999_999_999i64), json!(i64::MAX)] {
        let (s, v) = b.post(&path, json!({ "seconds": huge })).await;
        assert_eq!(s, StatusCode::OK, "seconds {huge}: {v}");
        assert_eq!(v["success"], true, "seconds {huge}: {v}");
    }
}

#[tokio::test]
async fn ack_routes_refuse_malformed_bodies_and_write_nothing() {
    let b = broker().await;
    for body in [
        json!({}),
        json!({"acknowledgments": null}),
        json!({"acknowledgments": {}}),
        json!({"acknowledgments": "x"}),
        json!({"acknowledgments": 3}),
        json!({"acknowledgements": []}),
        json!({"consumerGroup": "g"}),
    ] {
        let (s, v) = b.post("/api/v1/ack/batch", body.clone()).await;
        check_error(
            &format!("ack/batch {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Exact("bad body: acknowledgments array is required"),
        );
    }
    for items in [json!([1]), json!(["x"]), json!([null]), json!([{}, []])] {
        let body = json!({ "acknowledgments": items });
        let (s, v) = b.post("/api/v1/ack/batch", body.clone()).await;
        check_error(
            &format!("ack/batch {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Prefix("bad body: "),
        );
    }
    assert_nothing_written(&b, "malformed acks").await;

    // Empty array: 200 [].
    let (s, v) = b
        .post("/api/v1/ack/batch", json!({"acknowledgments": []}))
        .await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));

    // Wrong types inside an ack item are not a 400 (the contract defaults them), but they
    // are never a 500 either: a per-item refusal, in request order.
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": 5, "partitionId": {}, "status": [], "leaseId": 7,
                   "consumerGroup": false, "error": {"x": 1}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = v.as_array().expect("an array");
    assert_eq!(r.len(), 1, "{v}");
    assert_eq!(r[0]["index"], 0);
    assert_eq!(r[0]["success"], false, "{v}");
    assert!(r[0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert_nothing_written(&b, "ack with wrong field types").await;
}

#[tokio::test]
async fn transaction_refuses_malformed_bundles_and_writes_nothing() {
    let b = broker().await;
    let push_op = json!({"type": "push", "items": [{"queue": "tq", "payload": {"n": 1}}]});
    let cases: Vec<(Value, Text)> = vec![
        (json!({}), Text::Exact("operations array required")),
        (
            json!({"operations": null}),
            Text::Exact("operations array required"),
        ),
        (
            json!({"operations": "x"}),
            Text::Exact("operations array required"),
        ),
        (
            json!({"operations": {}}),
            Text::Exact("operations array required"),
        ),
        (
            json!({"operations": []}),
            Text::Exact("operations array cannot be empty"),
        ),
        (
            json!({"operations": [push_op.clone(), {"type": "bogus"}]}),
            Text::Exact("Unknown operation type: bogus"),
        ),
        (
            json!({"operations": [push_op.clone(), {"queue": "tq"}]}),
            Text::Prefix("Unknown operation type"),
        ),
        (
            json!({"operations": [push_op.clone(), 5]}),
            Text::Prefix("Unknown operation type"),
        ),
        (
            json!({"operations": [push_op.clone(), {"type": "push", "items": "x"}]}),
            Text::Exact("items array is required"),
        ),
        (
            json!({"operations": [push_op.clone(), {"type": "push", "items": [{"queue": 5}]}]}),
            Text::Exact("Queue must be a string"),
        ),
        (
            json!({"operations": [push_op.clone(), {"type": "push", "queue": "tq", "partition": 1}]}),
            Text::Exact("Partition must be a string"),
        ),
        (
            json!({"operations": [{"type": "push", "items": [{"queue": "tq", "transactionId": 1}]}]}),
            Text::Exact("TransactionId must be a string"),
        ),
        (
            json!({"operations": [{"type": "push", "items": [{"queue": "tq", "traceId": 1}]}]}),
            Text::Exact("TraceId must be a string"),
        ),
        (
            json!({"operations": [{"type": "push", "items": [{"queue": "tq", "traceId": "nope"}]}]}),
            Text::Exact("TraceId must be a UUID"),
        ),
        (
            json!({"operations": [push_op.clone()], "requiredLeases": "x"}),
            Text::Any,
        ),
    ];
    for (body, text) in cases {
        let (s, v) = b.post("/api/v1/transaction", body.clone()).await;
        check_error(
            &format!("transaction {body}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            text,
        );
    }
    assert_nothing_written(&b, "malformed transactions").await;
}

// ---------------------------------------------------------------------------------------------
// 2. oversized bodies

#[tokio::test]
async fn oversized_bodies_get_413_json_and_store_nothing() {
    let b = broker_with(|c| c.max_body_bytes = 1024).await;
    let big = "x".repeat(2000);
    let push = json!({"items": [{"queue": "big", "payload": {"blob": big}}]}).to_string();
    assert!(push.len() > 1024);
    for (route, body) in [
        ("/api/v1/push", push.clone()),
        (
            "/api/v1/configure",
            json!({"queue": "big", "namespace": big}).to_string(),
        ),
        (
            "/api/v1/transaction",
            json!({"operations": [{"type": "push", "items": [{"queue": "big", "payload": big}]}]})
                .to_string(),
        ),
        (
            "/api/v1/ack/batch",
            json!({"acknowledgments": [{"transactionId": big, "partitionId": "x"}]}).to_string(),
        ),
        (LEASE_PATH, json!({"seconds": 30, "pad": big}).to_string()),
    ] {
        let res = b
            .http
            .post(format!("{}{route}", b.url))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let s = res.status();
        let cors = res
            .headers()
            .get("access-control-allow-origin")
            .map(|h| h.to_str().unwrap().to_string());
        let ctype = res
            .headers()
            .get("content-type")
            .map(|h| h.to_str().unwrap().to_string());
        let text = res.text().await.unwrap();
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("POST {route} oversized: body is not JSON: {text:?}"));
        check_error(
            &format!("POST {route} oversized"),
            (s, &v),
            StatusCode::PAYLOAD_TOO_LARGE,
            Text::Any,
        );
        assert_eq!(cors.as_deref(), Some("*"), "POST {route} oversized: CORS");
        assert!(
            ctype
                .as_deref()
                .is_some_and(|c| c.starts_with("application/json")),
            "POST {route} oversized: content-type {ctype:?}"
        );
    }
    assert_nothing_written(&b, "oversized bodies").await;

    // A chunked body (no Content-Length) over the limit is refused the same way.
    let addr = b.url.trim_start_matches("http://").to_string();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut req = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for chunk in push.as_bytes().chunks(200) {
        req.push_str(&format!(
            "{:x}\r\n{}\r\n",
            chunk.len(),
            std::str::from_utf8(chunk).unwrap()
        ));
    }
    req.push_str("0\r\n\r\n");
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), sock.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).to_string();
    assert!(
        answer.starts_with("HTTP/1.1 413"),
        "chunked oversized push: {answer}"
    );
    assert!(
        answer.contains("\"error\""),
        "chunked oversized push: {answer}"
    );
    assert_nothing_written(&b, "chunked oversized body").await;

    // Under the limit works, and round-trips.
    let small = json!({"items": [{"queue": "big", "payload": {"blob": "y".repeat(500)}}]});
    assert!(small.to_string().len() < 1024);
    let (s, v) = b.post("/api/v1/push", small).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let pop = b.pop("big", "").await;
    assert_eq!(pop["messages"][0]["data"]["blob"], "y".repeat(500));
}

// ---------------------------------------------------------------------------------------------
// 3. query values

#[tokio::test]
async fn pop_batch_is_clamped_to_the_maximum() {
    let b = broker().await;
    let items: Vec<Value> = (0..10_001)
        .map(|i| json!({"queue": "huge", "transactionId": format!("t{i}"), "payload": i}))
        .collect();
    let (s, v) = b.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(v.as_array().unwrap().len(), 10_001);

    for (group, batch) in [("a", "999999999"), ("b", "99999999999999999999999999")] {
        let (s, v) = b
            .get(&format!(
                "/api/v1/pop/queue/huge?wait=false&consumerGroup={group}&batch={batch}"
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "batch={batch}: {v}");
        let n = v["messages"].as_array().unwrap().len();
        assert!((1..=10_000).contains(&n), "batch={batch}: {n} messages");
    }
}

#[tokio::test]
async fn pop_garbage_query_values_are_clamped_or_defaulted() {
    let b = broker().await;
    b.push("gq", "Default", &["a", "b", "c", "d", "e"]).await;
    b.push("gq", "other", &["f"]).await;

    // (query, expected message count): each uses its own named group, so earlier leases do
    // not interfere.
    let cases = [
        ("batch=0", 1),
        ("batch=", 1),
        // One partition claimed: 5 (Default) or 1 (other) messages; 0 = "checked below".
        ("partitions=-1&batch=10", 0),
        ("partitions=abc&batch=10", 0),
        ("partitions=0&batch=10", 0),
        ("partitions=99999999999999999999&batch=10", 0),
        ("timeout=abc", 1),
        ("timeout=-1", 1),
        ("timeout=99999999999999999999", 1),
        ("wait=maybe", 1),
        ("autoAck=maybe", 1),
        ("autopilot=maybe", 1),
        ("batch=2&batch=9", 2),
        ("consumerGroup=", 1),
    ];
    for (i, (q, want)) in cases.iter().enumerate() {
        // `consumerGroup=` (empty) means queue mode; give the others their own group.
        let group = if q.starts_with("consumerGroup") {
            String::new()
        } else {
            format!("&consumerGroup=g{i}")
        };
        let started = Instant::now();
        let (s, v) = b
            .get(&format!("/api/v1/pop/queue/gq?wait=false{group}&{q}"))
            .await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{q}: took {:?}",
            started.elapsed()
        );
        assert_eq!(s, StatusCode::OK, "{q}: {v}");
        assert_eq!(v["success"], true, "{q}: {v}");
        let n = v["messages"].as_array().unwrap().len();
        if *want == 0 {
            let claimed = v["partitionsClaimed"].as_i64().unwrap_or(0);
            if q.starts_with("partitions=9") {
                // Clamped or defaulted: either is fine, as long as it is an answer.
                assert!((1..=2).contains(&claimed) && n >= 1, "{q}: {v}");
            } else {
                assert_eq!(claimed, 1, "{q}: {v}");
                assert!(n == 5 || n == 1, "{q}: {n} messages: {v}");
            }
        } else {
            assert_eq!(n, *want, "{q}: {v}");
        }
    }

    // The partition route clamps the same way.
    let (s, v) = b
        .get("/api/v1/pop/queue/gq/partition/Default?wait=false&consumerGroup=p1&batch=0&partitions=-1")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["messages"].as_array().unwrap().len(), 1, "{v}");

    // A batch that is not a count is refused by name (issue 50; Queen's clients send only
    // counts, and Queen 0.15 failed on a negative one in SQL), on both routes, and nothing is
    // leased.
    for path in [
        "/api/v1/pop/queue/gq",
        "/api/v1/pop/queue/gq/partition/Default",
    ] {
        for batch in ["-5", "-1", "abc", "1.5", "%FF"] {
            let (s, v) = b
                .get(&format!(
                    "{path}?wait=false&consumerGroup=refused&batch={batch}"
                ))
                .await;
            let shown = if batch == "%FF" { "\u{FFFD}" } else { batch };
            let want = format!("batch must be a non-negative integer, got '{shown}'");
            assert_eq!(
                (s, v["error"].as_str()),
                (StatusCode::BAD_REQUEST, Some(want.as_str())),
                "{path} {batch}: {v}"
            );
        }
    }
    let (_, v) = b
        .get("/api/v1/pop/queue/gq?wait=false&consumerGroup=refused&batch=9")
        .await;
    assert_eq!(
        v["messages"].as_array().unwrap().len(),
        5,
        "nothing was leased: {v}"
    );

    // A long poll with a negative timeout answers at once; with a huge one it answers as
    // soon as there is data (no overflow computing the deadline).
    let started = Instant::now();
    let (s, v) = b.get("/api/v1/pop/queue/empty?wait=true&timeout=-1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["messages"], json!([]), "{v}");
    assert!(started.elapsed() < Duration::from_secs(5));
    for t in ["9223372036854775807", "18446744073709551615"] {
        let (s, v) = b
            .get(&format!(
                "/api/v1/pop/queue/gq?wait=true&consumerGroup=huge{}&timeout={t}",
                t.len()
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "timeout={t}: {v}");
        assert_eq!(
            v["messages"].as_array().unwrap().len(),
            1,
            "timeout={t}: {v}"
        );
    }
}

#[tokio::test]
async fn pop_refuses_unparsable_subscription_values_and_writes_nothing() {
    let b = broker().await;
    b.push("sq", "Default", &["a"]).await;
    let before = counts(&b).await;
    for q in [
        "consumerGroup=g&subscriptionFrom=garbage",
        "consumerGroup=g&subscriptionFrom=2026-13-45T99:00:00Z",
        "consumerGroup=g&subscriptionFrom=yesterday&subscriptionMode=new",
        "subscriptionFrom=garbage",
    ] {
        for path in [
            "/api/v1/pop/queue/sq",
            "/api/v1/pop/queue/sq/partition/Default",
        ] {
            let (s, v) = b.get(&format!("{path}?wait=false&{q}")).await;
            check_error(
                &format!("GET {path}?{q}"),
                (s, &v),
                StatusCode::BAD_REQUEST,
                Text::Any,
            );
            assert!(
                v["error"].as_str().unwrap().contains("subscriptionFrom"),
                "{q}: {v}"
            );
        }
    }
    // An unknown subscriptionMode is not refused: Queen 0.15 reads it as "from the first
    // message" (tests/api/queen_compat.rs).
    assert_eq!(counts(&b).await, before, "a refused pop wrote rows");

    // Control: a valid timestamp and `now` are accepted.
    let v = b
        .pop(
            "sq",
            "consumerGroup=ok&subscriptionFrom=2000-01-01T00:00:00Z",
        )
        .await;
    assert_eq!(v["messages"].as_array().unwrap().len(), 1, "{v}");
    let v = b.pop("sq", "consumerGroup=ok2&subscriptionFrom=now").await;
    assert_eq!(v["success"], false, "{v}");
}

#[tokio::test]
async fn dlq_query_values_are_validated_or_clamped() {
    let b = broker().await;
    for q in [
        "from=garbage",
        "to=garbage",
        "from=2026-02-30T00:00:00Z",
        "queue=x&from=yesterday",
    ] {
        let (s, v) = b.get(&format!("/api/v1/dlq?{q}")).await;
        check_error(
            &format!("GET /api/v1/dlq?{q}"),
            (s, &v),
            StatusCode::BAD_REQUEST,
            Text::Any,
        );
        let key = if q.contains("to=") { "to" } else { "from" };
        assert!(v["error"].as_str().unwrap().contains(key), "{q}: {v}");
    }
    for q in [
        "limit=-1",
        "limit=0",
        "limit=abc",
        "limit=99999999999999999999",
        "offset=-5",
        "offset=abc",
        "limit=-1&offset=-1&queue=&consumerGroup=&partition=",
        "from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z",
    ] {
        let (s, v) = b.get(&format!("/api/v1/dlq?{q}")).await;
        assert_eq!(s, StatusCode::OK, "{q}: {v}");
        assert_eq!(v["messages"], json!([]), "{q}: {v}");
        assert_eq!(v["total"], 0, "{q}: {v}");
        let limit = v["pagination"]["limit"].as_i64().unwrap();
        let offset = v["pagination"]["offset"].as_i64().unwrap();
        assert!(limit >= 1 && offset >= 0, "{q}: {v}");
    }
}

// ---------------------------------------------------------------------------------------------
// 4. ids that are not UUIDs

#[tokio::test]
async fn non_uuid_ids_get_business_answers_not_500s() {
    let b = broker().await;
    // Ack: a per-item database error, 200.
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": "t1", "partitionId": "not-a-uuid", "status": "completed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = v.as_array().expect("array");
    assert_eq!(r.len(), 1, "{v}");
    assert_eq!(r[0]["success"], false, "{v}");
    assert_eq!(r[0]["transactionId"], "t1", "{v}");
    assert!(
        r[0]["error"].as_str().is_some_and(|e| e.contains("uuid")),
        "{v}"
    );

    // Batch: the bad group fails alone, the other answers for itself.
    let r = b
        .ack_batch(
            None,
            json!([
                {"transactionId": "t1", "partitionId": "not-a-uuid"},
                {"transactionId": "t2", "partitionId": "0190f3f4-7a1b-7c3d-8e4f-5a6b7c8d9e0f"},
                {"transactionId": "t3", "partitionId": ""},
            ]),
        )
        .await;
    assert_eq!(r.len(), 3);
    for (i, item) in r.iter().enumerate() {
        assert_eq!(item["index"], i);
        assert_eq!(item["success"], false, "{item}");
    }
    assert!(r[0]["error"].as_str().unwrap().contains("uuid"), "{:?}", r);
    assert_eq!(r[1]["error"], "consumer not found");

    // Lease extend.
    for body in [None, Some("{\"seconds\": 30}")] {
        let (s, v) = b
            .request(Method::POST, "/api/v1/lease/not-a-uuid/extend", body)
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["success"], false, "{v}");
        assert_eq!(v["error"], "Lease not found", "{v}");
        assert_eq!(v["leaseId"], "not-a-uuid", "{v}");
    }

    // Transaction: a non-UUID partition id rolls the bundle back (200 success:false), and
    // its push is not stored.
    for (i, body) in [
        json!({"operations": [
            {"type": "ack", "transactionId": "t1", "partitionId": "not-a-uuid"},
            {"type": "push", "items": [{"queue": "txq", "payload": 1, "transactionId": "x"}]}]}),
        json!({"operations": [
            {"type": "push", "items": [{"queue": "txq", "payload": 1, "transactionId": "x"}]}],
            "requiredLeases": ["not-a-uuid"]}),
        json!({"operations": [
            {"type": "ack", "transactionId": "t1", "partitionId": "0190f3f4-7a1b-7c3d-8e4f-5a6b7c8d9e0f",
             "leaseId": "not-a-uuid"}]}),
    ]
    .into_iter()
    .enumerate()
    {
        let (s, v) = b.post("/api/v1/transaction", body.clone()).await;
        assert_eq!(s, StatusCode::OK, "case {i} {body}: {v}");
        assert_eq!(v["success"], false, "case {i}: {v}");
        assert!(
            v["error"].as_str().is_some_and(|e| !e.is_empty()),
            "case {i}: {v}"
        );
        let msgs = b.indexed(None).await;
        assert_eq!(msgs, 0, "case {i}: a rolled-back bundle stored a message");
    }
    // A rolled-back bundle leaves nothing behind, not even the queue its push would have
    // auto-created.
    assert_nothing_written(&b, "non-UUID ids (rolled-back transactions)").await;
}

#[tokio::test]
async fn a_malformed_lease_id_on_a_real_cursor_is_an_invalid_lease() {
    let b = broker().await;
    let pushed = b.push("real", "Default", &["m1"]).await;
    let pid = pushed[0]["partition_id"].as_str().unwrap().to_string();
    b.pop("real", "").await;
    let before = b.cursor(&pid, "__QUEUE_MODE__").await;
    let r = b
        .ack_batch(
            None,
            json!([{"transactionId": "m1", "partitionId": pid, "leaseId": "not-a-uuid"}]),
        )
        .await;
    assert_eq!(r[0]["success"], false);
    assert_eq!(r[0]["error"], "invalid or expired lease");
    assert_eq!(b.cursor(&pid, "__QUEUE_MODE__").await, before);
}

// ---------------------------------------------------------------------------------------------
// 5. routing and CORS

fn assert_cors(label: &str, h: &reqwest::header::HeaderMap) {
    let get = |k: &str| h.get(k).map(|v| v.to_str().unwrap().to_string());
    assert_eq!(
        get("access-control-allow-origin").as_deref(),
        Some("*"),
        "{label}"
    );
    let methods = get("access-control-allow-methods").unwrap_or_default();
    for m in ["GET", "POST", "PUT", "DELETE", "OPTIONS"] {
        assert!(methods.contains(m), "{label}: allow-methods {methods:?}");
    }
    let headers = get("access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    for x in ["content-type", "authorization"] {
        assert!(headers.contains(x), "{label}: allow-headers {headers:?}");
    }
}

#[tokio::test]
async fn unknown_routes_answer_json_404() {
    let b = broker().await;
    // `GET /` is the web console (tests/api/console.rs); a file it does not have is not.
    for (method, path) in [
        (Method::GET, "/assets/nope.js"),
        (Method::GET, "/nope"),
        (Method::GET, "/api/v1/nope"),
        (Method::POST, "/api/v1/nope"),
        (Method::DELETE, "/api/v1/nope/deeper/still"),
        (Method::GET, "/api/v2/push"),
        (Method::GET, "/api/v1/pop/queue"),
        (Method::GET, "/api/v1/pop/queue/q/partition"),
        (Method::POST, "/api/v1/lease/abc"),
        (Method::GET, "/api/v1/pop/queue/q/partition/p/extra"),
        (Method::PUT, "/unknown"),
    ] {
        let res = b
            .http
            .request(method.clone(), format!("{}{path}", b.url))
            .send()
            .await
            .unwrap();
        let s = res.status();
        let label = format!("{method} {path}");
        assert_cors(&label, res.headers());
        let text = res.text().await.unwrap();
        assert_eq!(s, StatusCode::NOT_FOUND, "{label}: {text}");
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{label}: not JSON: {text:?}"));
        assert_eq!(v, json!({"error": "Not found"}), "{label}");
    }
    assert_nothing_written(&b, "unknown routes").await;
}

#[tokio::test]
async fn a_known_path_with_the_wrong_method_gets_a_json_4xx() {
    let b = broker().await;
    let mut failures = Vec::new();
    for (method, path) in [
        (Method::GET, "/api/v1/push"),
        (Method::PUT, "/api/v1/configure"),
        (Method::DELETE, "/api/v1/ack"),
        (Method::GET, "/api/v1/transaction"),
        (Method::POST, "/api/v1/pop/queue/q"),
        (Method::GET, "/api/v1/lease/abc/extend"),
    ] {
        if let Err(e) = json_4xx(&b, method.clone(), path, &[404, 405]).await {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_nothing_written(&b, "wrong methods").await;
}

/// `CORS_ALLOWED_ORIGINS` as a list: a listed origin is echoed (any letter case), another
/// gets no `Access-Control-Allow-Origin` (its browser refuses the answer), and the answers
/// vary by `Origin`; preflights alike.
#[tokio::test]
async fn listed_cors_origins_are_echoed_and_others_get_no_allow_origin() {
    let b = broker_with(|c| {
        c.cors_allowed_origins = "https://console.example, http://localhost:5173".into()
    })
    .await;
    for method in [Method::GET, Method::OPTIONS] {
        for (origin, allowed) in [
            ("https://console.example", true),
            ("HTTPS://Console.Example", true),
            ("http://localhost:5173", true),
            ("https://evil.example", false),
            ("https://console.example.evil", false),
        ] {
            let res = b
                .http
                .request(method.clone(), format!("{}/health", b.url))
                .header("origin", origin)
                .send()
                .await
                .unwrap();
            let h = res.headers();
            let label = format!("{method} from {origin}");
            let allow = h
                .get("access-control-allow-origin")
                .map(|v| v.to_str().unwrap());
            assert_eq!(allow, allowed.then_some(origin), "{label}");
            let vary: Vec<&str> = h
                .get_all("vary")
                .iter()
                .map(|v| v.to_str().unwrap())
                .collect();
            assert!(
                vary.iter().any(|v| v.contains("Origin")),
                "{label}: {vary:?}"
            );
        }
    }
}

#[tokio::test]
async fn options_is_204_with_cors_and_no_body_on_any_path() {
    let b = broker().await;
    for path in [
        "/api/v1/push",
        "/api/v1/configure",
        "/api/v1/ack/batch",
        "/api/v1/pop/queue/q",
        "/api/v1/lease/abc/extend",
        "/health",
        "/nope",
        "/",
        "/api/v1/pop/queue/caf%C3%A9%20q",
    ] {
        for preflight in [false, true] {
            let mut req = b.http.request(Method::OPTIONS, format!("{}{path}", b.url));
            if preflight {
                req = req
                    .header("origin", "http://dashboard.example")
                    .header("access-control-request-method", "POST")
                    .header(
                        "access-control-request-headers",
                        "content-type, authorization",
                    );
            }
            let res = req.send().await.unwrap();
            let label = format!("OPTIONS {path} (preflight headers: {preflight})");
            assert_eq!(res.status(), StatusCode::NO_CONTENT, "{label}");
            assert_cors(&label, res.headers());
            let body = res.bytes().await.unwrap();
            assert!(body.is_empty(), "{label}: body {body:?}");
        }
    }
    assert_nothing_written(&b, "OPTIONS").await;
}

#[tokio::test]
async fn json_responses_carry_cors_headers() {
    let b = broker().await;
    let cases: Vec<(Method, &str, Option<&str>, StatusCode)> = vec![
        (Method::GET, "/health", None, StatusCode::OK),
        (
            Method::POST,
            "/api/v1/push",
            Some(r#"{"items":[{"queue":"c"}]}"#),
            StatusCode::CREATED,
        ),
        (
            Method::GET,
            "/api/v1/pop/queue/c?wait=false",
            None,
            StatusCode::OK,
        ),
        (
            Method::POST,
            "/api/v1/push",
            Some("{"),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::POST,
            "/api/v1/ack",
            Some(""),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/api/v1/dlq?from=garbage",
            None,
            StatusCode::BAD_REQUEST,
        ),
        (Method::GET, "/api/v1/nope", None, StatusCode::NOT_FOUND),
        (Method::POST, LEASE_PATH, None, StatusCode::OK),
    ];
    for (method, path, body, want) in cases {
        let mut req = b.http.request(method.clone(), format!("{}{path}", b.url));
        if let Some(body) = body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let res = req.send().await.unwrap();
        let label = format!("{method} {path}");
        assert_eq!(res.status(), want, "{label}");
        assert_cors(&label, res.headers());
        let ctype = res
            .headers()
            .get("content-type")
            .map(|h| h.to_str().unwrap().to_string())
            .unwrap_or_default();
        assert!(ctype.starts_with("application/json"), "{label}: {ctype:?}");
        let text = res.text().await.unwrap();
        serde_json::from_str::<Value>(&text).unwrap_or_else(|_| panic!("{label}: {text:?}"));
    }
}

#[tokio::test]
async fn undecodable_path_segments_get_a_json_400() {
    let b = broker().await;
    let mut failures = Vec::new();
    for (method, path) in [
        (Method::GET, "/api/v1/pop/queue/%FF?wait=false"),
        (
            Method::GET,
            "/api/v1/pop/queue/q/partition/%C3%28?wait=false",
        ),
        (Method::POST, "/api/v1/lease/%FF/extend"),
        (Method::DELETE, "/api/v1/resources/queues/%FE"),
    ] {
        if let Err(e) = json_4xx(&b, method.clone(), path, &[400, 404]).await {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_nothing_written(&b, "undecodable paths").await;
}

// ---------------------------------------------------------------------------------------------
// 6. odd names

#[tokio::test]
async fn unicode_and_odd_names_round_trip_through_percent_encoded_paths() {
    let b = broker().await;
    let names = [
        ("café q", "partition one"),
        ("Ünïcødé 名前 🚀", "раздел ✓"),
        ("100% sure", "50%25"),
        ("plus+sign & amp=eq", "semi;colon,comma"),
        ("quote\"s 'apos'", "back\\slash"),
        ("dots.in.name", "tab\there"),
        ("hash#frag?query", "at@colon:"),
    ];
    for (i, (queue, partition)) in names.iter().enumerate() {
        let payload = json!({"i": i, "queue": queue, "partition": partition});
        let (s, v) = b
            .post(
                "/api/v1/push",
                json!({"items": [
                    {"queue": queue, "partition": partition, "payload": payload, "transactionId": "w"},
                    {"queue": queue, "partition": partition, "payload": payload, "transactionId": "p"},
                ]}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{queue:?}: {v}");
        assert_eq!(v[0]["queueName"], *queue, "{v}");

        // Wildcard route, queue percent-encoded.
        let (s, v) = b
            .get(&format!(
                "/api/v1/pop/queue/{}?wait=false&batch=1",
                seg(queue)
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "{queue:?}: {v}");
        assert_eq!(v["queue"], *queue, "{v}");
        assert_eq!(v["partition"], *partition, "{v}");
        let m = &v["messages"][0];
        assert_eq!(m["transactionId"], "w", "{v}");
        assert_eq!(m["data"], payload, "{v}");
        assert_eq!(m["partition"], *partition, "{v}");

        // Partition route, both names percent-encoded, another group.
        let (s, v) = b
            .get(&format!(
                "/api/v1/pop/queue/{}/partition/{}?wait=false&batch=10&consumerGroup=named",
                seg(queue),
                seg(partition)
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "{queue:?}/{partition:?}: {v}");
        assert_eq!(Broker::txids(&v), vec!["w", "p"], "{v}");
        assert_eq!(v["partition"], *partition, "{v}");
        assert_eq!(v["messages"][1]["data"], payload, "{v}");
    }

    // The exact path from the brief.
    let (s, v) = b
        .get("/api/v1/pop/queue/caf%C3%A9%20q?wait=false&batch=5&consumerGroup=brief")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["queue"], "café q");
    assert_eq!(v["partition"], "partition one");
    assert_eq!(Broker::txids(&v), vec!["w", "p"]);

    // The queue listing shows the names as pushed.
    let (_, list) = b.get("/api/v1/resources/queues").await;
    let listed: Vec<&str> = list["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap_or_default())
        .collect();
    for (queue, _) in names {
        assert!(listed.contains(&queue), "{queue:?} not in {listed:?}");
    }
}

#[tokio::test]
async fn nul_bytes_and_very_long_names_are_not_server_errors() {
    let b = broker().await;
    // Long names made of varied characters (so storage cannot compress them away).
    let long: String = (0..6000u32)
        .map(|i| char::from_u32(0x4e00 + (i * 7919) % 20000).unwrap())
        .collect();
    // Each case on its own queue names, so an earlier case's rows cannot hide a later one's.
    let cases = [
        ("nul in queue", json!({"queue": "a\u{0}b", "payload": 1})),
        (
            "nul in partition",
            json!({"queue": "nul1", "partition": "p\u{0}", "payload": 1}),
        ),
        (
            "nul in transactionId",
            json!({"queue": "nul2", "transactionId": "t\u{0}", "payload": 1}),
        ),
        (
            "nul in payload",
            json!({"queue": "nul3", "payload": {"s": "a\u{0}b"}}),
        ),
        (
            "nul in payload key",
            json!({"queue": "nul4", "payload": {"k\u{0}": 1}}),
        ),
        ("long queue", json!({"queue": long, "payload": 1})),
        (
            "long partition",
            json!({"queue": "long1", "partition": long, "payload": 1}),
        ),
        (
            "long transactionId",
            json!({"queue": "long2", "transactionId": long, "payload": 1}),
        ),
    ];
    let mut failures = Vec::new();
    for (label, item) in cases {
        let before = counts(&b).await;
        let (s, v) = b
            .post("/api/v1/push", json!({ "items": [item.clone()] }))
            .await;
        if s == StatusCode::CREATED {
            if v[0]["status"] != "queued" {
                failures.push(format!("{label}: 201 but {v}"));
                continue;
            }
            // Accepted: it must then round-trip.
            let q = item["queue"].as_str().unwrap();
            let (_, pop) = b
                .get(&format!("/api/v1/pop/queue/{}?wait=false", seg(q)))
                .await;
            let m = &pop["messages"][0];
            if m["data"] != item["payload"] {
                failures.push(format!("{label}: accepted but popped {pop}"));
            }
        } else {
            let is_json_400 =
                s == StatusCode::BAD_REQUEST && v["error"].as_str().is_some_and(|e| !e.is_empty());
            if !is_json_400 {
                failures.push(format!("{label}: {s} {v}"));
            }
            let after = counts(&b).await;
            if after != before {
                failures.push(format!(
                    "{label}: refused with {s} {v} but wrote rows: before {before:?}, after {after:?}"
                ));
            }
        }
    }
    // The same names through configure.
    for (label, queue) in [
        ("configure nul in queue", "c\u{0}q".to_string()),
        ("configure long queue", format!("c{long}")),
    ] {
        let before = counts(&b).await;
        let (s, v) = b.post("/api/v1/configure", json!({ "queue": queue })).await;
        if s == StatusCode::OK {
            if v["queue"] != json!(queue) {
                failures.push(format!("{label}: 200 but echoed {}", v["queue"]));
            }
        } else {
            let is_json_400 =
                s == StatusCode::BAD_REQUEST && v["error"].as_str().is_some_and(|e| !e.is_empty());
            if !is_json_400 {
                failures.push(format!("{label}: {s} {v}"));
            }
            let after = counts(&b).await;
            if after != before {
                failures.push(format!("{label}: refused with {s} {v} but wrote rows"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 7. payload shapes

#[tokio::test]
async fn every_payload_shape_round_trips_unchanged() {
    let b = broker().await;
    let mut deep = json!("bottom");
    for i in 0..100 {
        deep = if i % 2 == 0 {
            json!({ "k": deep })
        } else {
            json!([deep])
        };
    }
    let payloads: Vec<(&str, Value)> = vec![
        ("null", Value::Null),
        ("string", json!("a string")),
        ("empty string", json!("")),
        (
            "escapes",
            json!("line\nbreak \"quoted\" back\\slash\ttab é 🚀 \u{1}"),
        ),
        ("integer", json!(42)),
        ("zero", json!(0)),
        ("negative float", json!(-1.5)),
        ("big integer", json!(12345678901234567890u64)),
        ("small float", json!(0.1)),
        ("huge float", json!(1e300)),
        ("true", json!(true)),
        ("false", json!(false)),
        ("empty array", json!([])),
        ("array", json!([1, "two", null, {"x": []}, [[]]])),
        ("empty object", json!({})),
        (
            "object",
            json!({"a": null, "b": [1, 2], "c": {"d": "e"}, "": "empty key", "ключ": "значение"}),
        ),
        ("deep", deep),
    ];
    let items: Vec<Value> = payloads
        .iter()
        .map(|(name, p)| json!({"queue": "shapes", "transactionId": name, "payload": p}))
        .chain(std::iter::once(
            json!({"queue": "shapes", "transactionId": "absent"}),
        ))
        .collect();
    let (s, v) = b.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");

    let pop = b.pop("shapes", "batch=100").await;
    let msgs = pop["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), payloads.len() + 1, "{pop}");
    for (m, (name, p)) in msgs.iter().zip(&payloads) {
        assert_eq!(m["transactionId"], *name);
        assert_eq!(m.get("data"), Some(p), "payload {name} changed");
    }
    // An absent payload is `{}`.
    assert_eq!(msgs[payloads.len()]["data"], json!({}));

    // The same shapes through the transaction route (`payload` and its `data` alias).
    let ops: Vec<Value> = payloads
        .iter()
        .enumerate()
        .map(|(i, (name, p))| {
            let key = if i % 2 == 0 { "payload" } else { "data" };
            json!({"type": "push", "items": [{"queue": "shapes2", "transactionId": name, key: p}]})
        })
        .collect();
    let (s, v) = b
        .post("/api/v1/transaction", json!({ "operations": ops }))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["success"], true, "{v}");
    let pop = b.pop("shapes2", "batch=100").await;
    let msgs = pop["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), payloads.len(), "{pop}");
    for (m, (name, p)) in msgs.iter().zip(&payloads) {
        assert_eq!(m["transactionId"], *name);
        assert_eq!(m.get("data"), Some(p), "transaction payload {name} changed");
    }
}

/// A `Content-Length` over the limit is refused before any of the body is read: the 413
/// comes while the client has sent only its headers. Headers too large or too many get a
/// JSON 431, not hyper's empty one.
#[tokio::test]
async fn oversized_requests_are_refused_up_front_with_json() {
    let b = broker_with(|c| c.max_body_bytes = 1024).await;
    let addr = b.url.trim_start_matches("http://").to_string();
    let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 1000000000\r\n\r\n{{\"items\":["
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf))
        .await
        .expect("answered with the body unsent")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"error\""), "{answer}");

    for (what, headers) in [
        ("large", vec![format!("X-Pad: {}", "p".repeat(140_000))]),
        ("many", (0..150).map(|i| format!("X-H{i}: v")).collect()),
    ] {
        let mut sock = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let req = format!(
            "GET /health HTTP/1.1\r\nHost: {addr}\r\n{}\r\nConnection: close\r\n\r\n",
            headers.join("\r\n")
        );
        sock.write_all(req.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer).to_string();
        assert!(answer.starts_with("HTTP/1.1 431"), "{what}: {answer}");
        assert!(
            answer.contains(r#"{"error":"Request header fields too large"}"#),
            "{what}: {answer}"
        );
    }
    assert_nothing_written(&b, "refused up front").await;
}

/// Items cost the broker memory beyond their bytes, so their number is bounded too: a push or
/// a transaction bundle over `MAX_PUSH_ITEMS` is refused whole with a 413 that says the
/// limit, and one at the limit is served.
#[tokio::test]
async fn a_request_of_more_items_than_the_limit_is_refused_whole() {
    let b = broker_with(|c| c.max_push_items = 10).await;
    let items = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| json!({"queue": "many", "transactionId": format!("m-{n}-{i}")}))
            .collect()
    };
    let (status, body) = b.post("/api/v1/push", json!({ "items": items(11) })).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(
        body["error"],
        "A request of 11 items is over the limit of 10 items (MAX_PUSH_ITEMS)"
    );
    let ops = json!({ "operations": [{"type": "push", "items": items(11)}] });
    let (status, body) = b.post("/api/v1/transaction", ops).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_nothing_written(&b, "over the item limit").await;

    let (status, body) = b.post("/api/v1/push", json!({ "items": items(10) })).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body.as_array().map(Vec::len), Some(10));
}

/// A push answered in chunks (over 1,000 items) is one JSON array, in item order, whatever
/// the chunk boundaries.
#[tokio::test]
async fn a_large_push_answer_is_one_array_in_item_order() {
    let b = broker().await;
    for n in [999, 1000, 1001, 2500] {
        let items: Vec<Value> = (0..n)
            .map(|i| {
                json!({"queue": "chunks", "partition": format!("p{}", i % 7),
                            "transactionId": format!("c-{n}-{i}"), "payload": {"i": i}})
            })
            .collect();
        let (status, body) = b.post("/api/v1/push", json!({ "items": items })).await;
        assert_eq!(status, StatusCode::CREATED);
        let results = body.as_array().expect("an array");
        assert_eq!(results.len(), n);
        for (i, r) in results.iter().enumerate() {
            assert_eq!(r["index"], i, "{n}: {r}");
            assert_eq!(r["transaction_id"], format!("c-{n}-{i}"), "{n}");
            assert_eq!(r["status"], "queued", "{n}: {r}");
        }
    }
}

/// Large requests take turns (`MAX_LARGE_REQUESTS`): while one large upload holds the only
/// turn, a second large one waits and, its wait over, is told when to retry; a small
/// request is served meanwhile. Once the first is gone, large requests are served again.
#[tokio::test]
async fn large_requests_take_turns_and_small_ones_never_wait() {
    let b = broker_with(|c| {
        c.max_large_requests = 1;
        c.large_request_wait_ms = 300;
    })
    .await;
    let addr = b.url.trim_start_matches("http://").to_string();
    // Two megabytes declared, a few bytes sent: it holds the turn while its body trickles.
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /api/v1/push HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 2000000\r\n\r\n{{\"items\":["
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let push_large = |tag: &str| {
        let pad = "x".repeat(1100 * 1024);
        let body =
            json!({"items": [{"queue": "turns", "transactionId": tag, "payload": {"pad": pad}}]});
        b.http
            .post(format!("{}/api/v1/push", b.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let started = std::time::Instant::now();
    let refused = push_large("second").await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "it waited its turn first"
    );
    assert_eq!(refused.headers()["retry-after"], "1");
    let text: Value = refused.json().await.unwrap();
    assert_eq!(
        text["error"],
        "Server busy: too many large requests at once"
    );

    let small = b.push("turns", "", &["small"]).await;
    assert_eq!(small[0]["status"], "queued", "a small push never waits");

    drop(slow);
    let served = push_large("third").await.unwrap();
    assert_eq!(served.status(), StatusCode::CREATED);
    let answer: Value = served.json().await.unwrap();
    assert_eq!(answer[0]["status"], "queued");
}
