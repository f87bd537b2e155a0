//! The body targets: each body parser fed the raw bytes, as `RawBody` holds them after the
//! body limit. The seeds are the spec's examples.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::Method;

use super::{outcome, Input, Outcome, Target};
use crate::auth::Principal;
use crate::body::RawBody;
use crate::dlq::BulkBody;
use crate::routes::Level;
use crate::{ack, configure, consumer_groups, lease, maintenance, push, traces, transaction};

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
            &[
                (Method::POST, "/api/v1/dlq/requeue"),
                (Method::POST, "/api/v1/dlq/delete"),
            ],
            &crate::dlq::BULK_KEYS,
            DLQ_BULK,
            |b| outcome(BulkBody::parse(b)),
        ),
        body(
            &[(Method::POST, "/api/v1/traces")],
            &[
                "transactionId",
                "partitionId",
                "data",
                "consumerGroup",
                "eventType",
                "traceNames",
                "workerId",
            ],
            TRACES,
            |b| outcome(b.json().and_then(|v| traces::parse_record(&v).map(drop))),
        ),
    ]
}

const DLQ_BULK: &[&str] = &[
    r#"{"ids": [1, 2, 3], "dryRun": true}"#,
    r#"{"queue": "q", "consumerGroup": "g", "from": "2026-01-01T00:00:00Z",
        "to": "2026-02-01T00:00:00Z", "limit": 100}"#,
    r#"{"all": true}"#,
    r#"{"reason": "", "partition": "Default"}"#,
];

const TRACES: &[&str] = &[
    r#"{"transactionId": "t", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
        "data": {"step": "x"}, "consumerGroup": "g", "eventType": "info",
        "traceNames": ["a", "b"], "workerId": "w"}"#,
    r#"{"transactionId": "t", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
        "data": null, "traceNames": "a", "consumerGroup": null}"#,
];
