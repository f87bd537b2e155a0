//! The body targets: each body parser fed the raw bytes, as `RawBody` holds them after the
//! body limit. The seeds are the spec's examples.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::Method;

use super::{outcome, Input, Outcome, Target};
use crate::auth::Principal;
use crate::body::RawBody;
use crate::routes::Level;
use crate::{ack, configure, consumer_groups, lease, maintenance, push, transaction};

/// A small `MAX_PUSH_ITEMS`, so that generated arrays reach the item limit too.
const MAX_ITEMS: usize = 64;

/// Who pushes: the parsers stamp the token's `sub` on pushed messages.
fn principal() -> Principal {
    Principal {
        sub: Some("fuzz".into()),
        tenant: Arc::from("fuzz"),
        level: Level::Admin,
        verified: false,
        expires: None,
    }
}

fn body(
    routes: &[(Method, &'static str)],
    keys: &'static [&'static str],
    seeds: &'static [&'static str],
    parse: impl Fn(&RawBody) -> Outcome + Send + Sync + 'static,
) -> Target {
    let names: Vec<String> = routes.iter().map(|(m, p)| format!("{m} {p}")).collect();
    Target {
        name: format!("{} (body)", names.join(", ")),
        input: Input::Body,
        keys: keys.to_vec(),
        seeds: seeds.iter().map(|s| s.to_string()).collect(),
        routes: routes.to_vec(),
        run: Box::new(move |bytes| parse(&RawBody(Bytes::copy_from_slice(bytes)))),
    }
}

/// The body parsers the route table's entries declare.
fn declared() -> Vec<Target> {
    crate::routes::table()
        .entries
        .into_iter()
        .filter_map(|e| {
            let r = e.reads.body?;
            let parse = r.parse;
            Some(Target {
                name: format!("{} {} (body)", e.method, e.path),
                input: Input::Body,
                keys: r.keys.to_vec(),
                seeds: r.seeds,
                routes: vec![(e.method, e.path)],
                run: Box::new(move |bytes| outcome(parse(&RawBody(Bytes::copy_from_slice(bytes))))),
            })
        })
        .collect()
}

pub(super) fn targets() -> Vec<Target> {
    let mut all = declared();
    all.extend(listed());
    all
}

fn listed() -> Vec<Target> {
    let who = principal();
    let who2 = principal();
    vec![
        body(
            &[(Method::POST, "/api/v1/push")],
            &[
                "items",
                "queue",
                "partition",
                "payload",
                "transactionId",
                "traceId",
                "namespace",
                "task",
                "producerSub",
                "bufferMs",
                "bufferMax",
            ],
            PUSH,
            move |b| outcome(push::parse_push(b, &who, MAX_ITEMS)),
        ),
        body(&[(Method::POST, "/api/v1/ack")], ACK_KEYS, ACK, |b| {
            outcome(ack::parse_single(b))
        }),
        body(
            &[(Method::POST, "/api/v1/ack/batch")],
            ACK_KEYS,
            ACK_BATCH,
            |b| outcome(ack::parse_batch(b)),
        ),
        body(
            &[(Method::POST, "/api/v1/transaction")],
            &[
                "operations",
                "type",
                "ack",
                "push",
                "items",
                "queue",
                "partition",
                "payload",
                "data",
                "transactionId",
                "traceId",
                "partitionId",
                "status",
                "consumerGroup",
                "leaseId",
                "error",
                "requiredLeases",
                "kv",
                "timers",
            ],
            TRANSACTION,
            move |b| outcome(transaction::parse_bundle(b, &who2, MAX_ITEMS)),
        ),
        body(
            &[(Method::POST, "/api/v1/configure")],
            &[
                "queue",
                "namespace",
                "task",
                "options",
                "leaseTime",
                "retryLimit",
                "retryDelay",
                "maxSize",
                "ttl",
                "deadLetterQueue",
                "dlqAfterMaxRetries",
                "priority",
                "delayedProcessing",
                "windowBuffer",
                "retentionSeconds",
                "completedRetentionSeconds",
                "retentionEnabled",
                "encryptionEnabled",
                "maxWaitTimeSeconds",
            ],
            CONFIGURE,
            |b| outcome(configure::parse_configure(b)),
        ),
        body(
            &[(Method::POST, "/api/v1/lease/{lease_id}/extend")],
            &["seconds"],
            &["{\"seconds\": 120}", "{}", "", "{\"seconds\": null}"],
            |b| outcome(lease::parse_seconds(b)),
        ),
        body(
            &[
                (Method::POST, "/api/v1/system/maintenance"),
                (Method::POST, "/api/v1/system/maintenance/pop"),
            ],
            &["enabled"],
            &["{\"enabled\": true}", "{\"enabled\": false}"],
            |b| outcome(maintenance::enabled(b)),
        ),
    ]
}

const PUSH: &[&str] = &[
    r#"{"items": [{"queue": "orders", "partition": "customer-42", "payload": {"id": 1},
        "transactionId": "ord-77-created", "traceId": "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23"}]}"#,
    r#"{"items": []}"#,
    r#"{"items": [{"queue": "q", "payload": null},
        {"queue": "q", "partition": "", "transactionId": "", "traceId": ""}]}"#,
    r#"{"items": [{"queue": "a", "payload": [1, "two", {"three": 3.0}], "producerSub": "x"}],
        "bufferMs": 10}"#,
];

const ACK_KEYS: &[&str] = &[
    "acknowledgments",
    "transactionId",
    "partitionId",
    "status",
    "consumerGroup",
    "leaseId",
    "error",
];

const ACK: &[&str] = &[
    r#"{"transactionId": "inv-3001", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
        "status": "completed", "leaseId": "0190a6c4-0000-7000-8000-000000000001",
        "consumerGroup": "ledger", "error": null}"#,
    r#"{"transactionId": "t", "partitionId": "p", "status": "failed", "error": "boom"}"#,
    r#"{"transactionId": "t", "partitionId": "p", "status": "dlq", "consumerGroup": null}"#,
];

const ACK_BATCH: &[&str] = &[
    r#"{"consumerGroup": "ledger", "acknowledgments": [
        {"transactionId": "inv-3001", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
         "status": "completed", "leaseId": "0190a6c4-0000-7000-8000-000000000001"},
        {"transactionId": "inv-3002", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
         "status": "failed", "leaseId": "0190a6c4-0000-7000-8000-000000000001",
         "error": "tax service timeout"}]}"#,
    r#"{"acknowledgments": []}"#,
];

const TRANSACTION: &[&str] = &[
    r#"{"operations": [
        {"type": "ack", "transactionId": "in-1", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
         "status": "completed", "consumerGroup": "stage2", "leaseId": "l-1"},
        {"type": "push", "items": [{"queue": "invoices.render", "partition": "acct-9",
         "payload": {"total": 42}, "transactionId": "out-1"}]}],
       "requiredLeases": ["l-1"]}"#,
    r#"{"operations": [{"type": "push", "queue": "q", "data": {"x": 1}}], "requiredLeases": null}"#,
];

const CONFIGURE: &[&str] = &[
    r#"{"queue": "orders", "namespace": "billing", "task": "invoice",
        "options": {"leaseTime": 300, "retryLimit": 3, "retryDelay": 1000, "maxSize": 0,
        "ttl": 3600, "deadLetterQueue": true, "dlqAfterMaxRetries": false, "priority": 0,
        "delayedProcessing": 0, "windowBuffer": 0, "retentionSeconds": 0,
        "completedRetentionSeconds": 0, "retentionEnabled": false, "encryptionEnabled": false,
        "maxWaitTimeSeconds": 0}}"#,
    r#"{"queue": "q", "namespace": null, "options": {"leaseTime": "300", "deadLetterQueue": "true"}}"#,
    r#"{"queue": ""}"#,
];
