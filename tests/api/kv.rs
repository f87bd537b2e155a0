//! Key/value through HTTP (spec §18.1, the client's `queen/kv`): every operation and its
//! answer, versions and `expect`, expiry (an expired row is absent before it is pruned, and
//! retention prunes it), `incr`'s bounds, `required`, paging, bounds and bad input, tenancy,
//! concurrency, and the transaction route's `kv` rider.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{authed_broker, broker, token, Broker};
use crate::wire::{self, KvAnswer, KvGot, KvMany, KvPrefix, KvWritten, Transacted, TxRider};

/// `operations` through `POST /api/v1/kv`: the results.
async fn kv(b: &Broker, ops: Value) -> Vec<Value> {
    let (s, v) = b.post("/api/v1/kv", json!({ "operations": ops })).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read::<KvAnswer>(&v).results
}

async fn one(b: &Broker, op: Value) -> Value {
    let r = kv(b, json!([op])).await;
    assert_eq!(r.len(), 1);
    r[0].clone()
}

/// [`one`] of a write (`put`, `putIfAbsent`, `incr`, `delete`), read.
async fn write(b: &Broker, op: Value) -> KvWritten {
    wire::read(&one(b, op).await)
}

/// [`one`] of a `get` of `key` in `ns`, read.
async fn got(b: &Broker, ns: &str, key: &str) -> KvGot {
    wire::read(&one(b, get(ns, key)).await)
}

fn put(ns: &str, key: &str, value: Value) -> Value {
    json!({"op": "put", "ns": ns, "key": key, "value": value, "forever": true})
}

fn get(ns: &str, key: &str) -> Value {
    json!({"op": "get", "ns": ns, "key": key})
}

#[tokio::test]
async fn put_then_get_returns_the_value_as_sent_with_its_version() {
    let b = broker().await;
    let value = json!({"n": 1, "tags": ["a", "b"], "nested": {"x": 1.5}});
    let w = write(&b, put("users", "u:1", value.clone())).await;
    assert!(w.applied, "{w:?}");
    assert_eq!(w.version, 1);
    assert_eq!(w.value, Some(value.clone()));
    assert_eq!(w.expires_at, None, "forever has no expiry");
    let r = got(&b, "users", "u:1").await;
    assert!(r.found);
    assert_eq!(r.key, "u:1");
    assert_eq!(r.value, Some(value));
    assert_eq!(r.version, Some(1));
    assert!(r.updated_at.as_deref().unwrap().ends_with('Z'), "{r:?}");
    // A second put bumps the version; a value of null is a row, not an absence.
    let w = write(&b, put("users", "u:1", Value::Null)).await;
    assert_eq!(w.version, 2);
    let r = got(&b, "users", "u:1").await;
    assert_eq!((r.found, r.value), (true, None));
    // Another namespace is another key space.
    let r = one(&b, get("other", "u:1")).await;
    assert_eq!(r, json!({"found": false, "key": "u:1"}));
}

#[tokio::test]
async fn results_are_index_aligned_and_later_ops_see_earlier_writes() {
    let b = broker().await;
    let r = kv(
        &b,
        json!([
            get("ns", "a"),
            put("ns", "a", json!(1)),
            get("ns", "a"),
            {"op": "incr", "ns": "ns", "key": "a", "delta": 4, "forever": true},
            {"op": "delete", "ns": "ns", "key": "a"},
            get("ns", "a"),
        ]),
    )
    .await;
    assert_eq!(r.len(), 6);
    assert!(!wire::read::<KvGot>(&r[0]).found);
    assert!(wire::read::<KvWritten>(&r[1]).applied);
    assert_eq!(wire::read::<KvGot>(&r[2]).value, Some(json!(1)));
    let incr: KvWritten = wire::read(&r[3]);
    assert_eq!((incr.value, incr.version), (Some(json!(5)), 2));
    assert_eq!(r[4], json!({"applied": true, "key": "a", "version": 2}));
    assert!(!wire::read::<KvGot>(&r[5]).found);
}

#[tokio::test]
async fn expect_fences_writes_and_a_loser_reads_the_current_row() {
    let b = broker().await;
    one(&b, put("ns", "k", json!("v1"))).await;
    // expect 0: must not exist.
    let w = write(
        &b,
        json!({"op": "put", "ns": "ns", "key": "k", "value": "x", "forever": true, "expect": 0}),
    )
    .await;
    assert!(!w.applied);
    assert_eq!(w.reason.as_deref(), Some("version"));
    assert_eq!((w.value, w.version), (Some(json!("v1")), 1));
    // expect n: must be at version n.
    let w = write(
        &b,
        json!({"op": "put", "ns": "ns", "key": "k", "value": "v2", "forever": true, "expect": 1}),
    )
    .await;
    assert_eq!((w.applied, w.version), (true, 2));
    let w = write(
        &b,
        json!({"op": "put", "ns": "ns", "key": "k", "value": "v3", "forever": true, "expect": 1}),
    )
    .await;
    assert_eq!((w.applied, w.reason.as_deref()), (false, Some("version")));
    assert_eq!(w.value, Some(json!("v2")));
    // A pure update creates nothing.
    let w = write(
        &b,
        json!({"op": "put", "ns": "ns", "key": "nope", "value": 1, "forever": true, "expect": 3}),
    )
    .await;
    assert_eq!(w.reason.as_deref(), Some("absent"));
    assert_eq!((w.value, w.version), (None, 0));
    assert!(!got(&b, "ns", "nope").await.found);
    // putIfAbsent answers "did I win?".
    let pia =
        json!({"op": "putIfAbsent", "ns": "ns", "key": "lock", "value": "me", "ttlSeconds": 60});
    assert!(write(&b, pia.clone()).await.applied);
    let lost = write(&b, pia).await;
    assert_eq!((lost.applied, lost.value), (false, Some(json!("me"))));
    // delete: idempotent, fenced.
    let d = write(
        &b,
        json!({"op": "delete", "ns": "ns", "key": "k", "expect": 1}),
    )
    .await;
    assert_eq!((d.applied, d.reason.as_deref()), (false, Some("version")));
    let d = write(
        &b,
        json!({"op": "delete", "ns": "ns", "key": "k", "expect": 2}),
    )
    .await;
    assert!(d.applied);
    let d = write(&b, json!({"op": "delete", "ns": "ns", "key": "k"})).await;
    assert_eq!((d.applied, d.reason.as_deref()), (false, Some("absent")));
}

#[tokio::test]
async fn an_expired_row_is_absent_before_it_is_pruned_and_retention_prunes_it() {
    let b = broker().await;
    one(
        &b,
        json!({"op": "put", "ns": "t", "key": "gone", "value": 7, "ttlSeconds": 1}),
    )
    .await;
    one(
        &b,
        json!({"op": "put", "ns": "t", "key": "stays", "value": 8, "ttlSeconds": 3600}),
    )
    .await;
    let live = got(&b, "t", "gone").await;
    assert!(live.found);
    assert!(live.expires_at.is_some(), "{live:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let db = b.db().await;
    let rows = |db: tokio_postgres::Client| async move {
        db.query_one("SELECT count(*) AS n FROM kv", &[])
            .await
            .unwrap()
            .get::<_, i64>("n")
    };
    assert_eq!(rows(b.db().await).await, 2, "not pruned yet");
    drop(db);
    assert!(!got(&b, "t", "gone").await.found);
    let many: KvMany = wire::read(
        &one(
            &b,
            json!({"op": "getMany", "ns": "t", "keys": ["gone", "stays"]}),
        )
        .await,
    );
    assert_eq!(many.missing, ["gone"]);
    assert_eq!(many.rows.len(), 1);
    let page: KvPrefix =
        wire::read(&one(&b, json!({"op": "getPrefix", "ns": "t", "prefix": "g"})).await);
    assert!(page.rows.is_empty());
    // Written again: a new life, from version 1; expect 0 wins against the expired row.
    let w = write(
        &b,
        json!({"op": "put", "ns": "t", "key": "gone", "value": 9, "forever": true, "expect": 0}),
    )
    .await;
    assert_eq!((w.applied, w.version), (true, 1));
    one(
        &b,
        json!({"op": "put", "ns": "t", "key": "gone2", "value": 1, "ttlSeconds": 1}),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    b.retention_pass().await;
    assert_eq!(
        rows(b.db().await).await,
        2,
        "the expired row was pruned, the live ones kept"
    );
}

#[tokio::test]
async fn incr_counts_from_zero_admits_within_bounds_and_keeps_a_live_rows_expiry() {
    let b = broker().await;
    let incr = |delta: i64| json!({"op": "incr", "ns": "rl", "key": "acme", "delta": delta, "max": 3, "ttlSeconds": 60});
    let first = write(&b, incr(1)).await;
    assert_eq!((first.applied, first.value), (true, Some(json!(1))));
    let expiry = first.expires_at;
    assert!(expiry.is_some());
    for want in [2, 3] {
        let r = write(&b, incr(1)).await;
        assert_eq!(r.value, Some(json!(want)));
        assert_eq!(r.expires_at, expiry, "the window does not slide");
    }
    let refused = write(&b, incr(1)).await;
    assert!(!refused.applied);
    assert_eq!(refused.reason.as_deref(), Some("max"));
    assert_eq!((refused.value, refused.version), (Some(json!(3)), 3));
    let r = write(
        &b,
        json!({"op": "incr", "ns": "rl", "key": "acme", "delta": -5, "min": 0, "forever": true}),
    )
    .await;
    assert_eq!(r.reason.as_deref(), Some("min"));
    one(&b, put("rl", "text", json!("seven"))).await;
    let r = write(
        &b,
        json!({"op": "incr", "ns": "rl", "key": "text", "forever": true}),
    )
    .await;
    assert_eq!(r.reason.as_deref(), Some("not_a_number"));
    // delta defaults to 1, and a float delta makes a float.
    let r = write(
        &b,
        json!({"op": "incr", "ns": "rl", "key": "f", "forever": true}),
    )
    .await;
    assert_eq!(r.value, Some(json!(1)));
    let r = write(
        &b,
        json!({"op": "incr", "ns": "rl", "key": "f", "delta": 0.5, "forever": true}),
    )
    .await;
    assert_eq!(r.value, Some(json!(1.5)));
}

#[tokio::test]
async fn concurrent_put_if_absent_has_exactly_one_winner_and_concurrent_incrs_all_count() {
    let b = std::sync::Arc::new(broker().await);
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let b = b.clone();
            tokio::spawn(async move {
                let r = kv(&b, json!([
                    {"op": "putIfAbsent", "ns": "race", "key": "winner", "value": i, "forever": true},
                    {"op": "incr", "ns": "race", "key": "count", "forever": true},
                ]))
                .await;
                wire::read::<KvWritten>(&r[0]).applied
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        winners += t.await.unwrap() as usize;
    }
    assert_eq!(winners, 1);
    assert_eq!(got(&b, "race", "count").await.value, Some(json!(12)));
}

#[tokio::test]
async fn get_prefix_pages_in_key_order_and_get_many_says_what_is_missing() {
    let b = broker().await;
    let ops: Vec<Value> = (0..25)
        .map(|i| put("p", &format!("user:{i:02}"), json!(i)))
        .chain([
            put("p", "user;", json!("after the prefix")),
            put("p", "use", json!("before")),
        ])
        .collect();
    kv(&b, Value::Array(ops)).await;
    let mut keys = vec![];
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut op = json!({"op": "getPrefix", "ns": "p", "prefix": "user:", "limit": 10});
        if let Some(a) = &after {
            op["after"] = json!(a);
        }
        let page: KvPrefix = wire::read(&one(&b, op).await);
        pages += 1;
        for r in page.rows {
            assert!(r.value.as_ref().is_some_and(Value::is_number));
            keys.push(r.key);
        }
        if !page.truncated {
            assert_eq!(page.next_after, None);
            break;
        }
        after = Some(page.next_after.unwrap());
    }
    assert_eq!(pages, 3);
    let want: Vec<String> = (0..25).map(|i| format!("user:{i:02}")).collect();
    assert_eq!(keys, want);
    // keysOnly leaves the values out (absent, on the JSON itself); a limit past the maximum
    // is clamped, not refused.
    let page = one(&b, json!({"op": "getPrefix", "ns": "p", "prefix": "user:0", "keysOnly": true, "limit": 100000})).await;
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    assert!(rows[0].get("value").is_none(), "{}", rows[0]);
    let many: KvMany = wire::read(
        &one(
            &b,
            json!({"op": "getMany", "ns": "p", "keys": ["user:03", "nope", "user:01", "user:03"]}),
        )
        .await,
    );
    let got: Vec<&str> = many.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(got, ["user:03", "user:01"], "in the order asked, each once");
    assert_eq!(many.missing, ["nope"]);
    assert!(!many.truncated);
}

async fn refused(b: &Broker, ops: Value) -> (StatusCode, Value) {
    b.post("/api/v1/kv", json!({ "operations": ops })).await
}

#[tokio::test]
async fn bad_operations_are_refused_whole_with_a_code_and_nothing_applies() {
    let b = broker().await;
    let cases = [
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1}]),
            "kv_expiry_not_specified",
        ),
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1, "forever": true, "ttlSeconds": 5}]),
            "kv_expiry_not_specified",
        ),
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1, "ttlSeconds": 0}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "getPrefix", "ns": "n", "prefix": ""}]),
            "kv_prefix_required",
        ),
        (
            json!([{"op": "frobnicate", "ns": "n", "key": "k"}]),
            "kv_invalid",
        ),
        (json!([{"op": "get", "ns": "", "key": "k"}]), "kv_invalid"),
        (
            json!([{"op": "get", "ns": "n", "key": "a\u{0}b"}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "get", "ns": "n", "key": "k".repeat(1025)}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "put", "ns": "n", "key": "k", "value": 1, "forever": true, "expect": -1}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "putIfAbsent", "ns": "n", "key": "k", "value": 1, "forever": true, "expect": 2}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "incr", "ns": "n", "key": "k", "forever": true, "expect": 1}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "incr", "ns": "n", "key": "k", "forever": true, "delta": "1"}]),
            "kv_invalid",
        ),
        (
            json!([{"op": "getMany", "ns": "n", "keys": []}]),
            "kv_invalid",
        ),
    ];
    for (ops, code) in cases {
        // A valid write first: the bad op refuses the request whole.
        let mut all = vec![put("n", "first", json!(1))];
        all.extend(ops.as_array().unwrap().clone());
        let (s, v) = refused(&b, Value::Array(all)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{ops}: {v}");
        assert_eq!(v["code"], code, "{ops}: {v}");
        let text = v["error"].as_str().unwrap();
        assert!(text.contains("operations[1]"), "{v}");
        assert!(!text.contains(".:"), "a field path ends in a dot: {v}");
    }
    assert!(!got(&b, "n", "first").await.found);
    let (s, v) = b.post("/api/v1/kv", json!({"ops": []})).await;
    assert_eq!(
        (s, v["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("kv_invalid"))
    );
    let big = "x".repeat((1 << 20) + 1);
    let (s, v) = refused(&b, json!([put("n", "k", json!(big))])).await;
    assert_eq!(
        (s, v["code"].clone()),
        (StatusCode::PAYLOAD_TOO_LARGE, json!("kv_too_large"))
    );
    let many: Vec<Value> = (0..1001).map(|i| get("n", &i.to_string())).collect();
    let (s, _) = refused(&b, Value::Array(many)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_required_op_that_does_not_apply_rolls_the_request_back() {
    let b = broker().await;
    one(&b, put("g", "taken", json!("x"))).await;
    let (s, v) = refused(
        &b,
        json!([
            put("g", "written-first", json!(1)),
            {"op": "putIfAbsent", "ns": "g", "key": "taken", "value": "y", "forever": true, "required": true},
        ]),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["code"], "kv_precondition");
    let p: wire::KvPrecondition = wire::read(&v);
    assert_eq!((p.failed_index, p.kv_reason.as_str()), (1, "version"));
    assert_eq!((p.value, p.version), (json!("x"), 1));
    assert!(!got(&b, "g", "written-first").await.found);
    // Not required: answered, and the rest applies.
    let r = kv(
        &b,
        json!([
            put("g", "written-first", json!(1)),
            {"op": "putIfAbsent", "ns": "g", "key": "taken", "value": "y", "forever": true},
        ]),
    )
    .await;
    assert!(!wire::read::<KvWritten>(&r[1]).applied);
    assert!(got(&b, "g", "written-first").await.found);
}

#[tokio::test]
async fn tenants_have_their_own_key_spaces() {
    let b = authed_broker().await;
    let acme = token("read-write").tenant("acme").mint();
    let globex = token("read-write").tenant("globex").mint();
    let body = |ops: Value| json!({ "operations": ops }).to_string();
    let (s, _) = b
        .request_as(
            Some(&acme),
            reqwest::Method::POST,
            "/api/v1/kv",
            Some(&body(json!([put("cfg", "k", json!("acme's"))]))),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, v) = b
        .request_as(
            Some(&globex),
            reqwest::Method::POST,
            "/api/v1/kv",
            Some(&body(
                json!([get("cfg", "k"), {"op": "getPrefix", "ns": "cfg", "prefix": "k"}]),
            )),
        )
        .await;
    let results = wire::read::<KvAnswer>(&v).results;
    assert!(!wire::read::<KvGot>(&results[0]).found, "{v}");
    assert!(wire::read::<KvPrefix>(&results[1]).rows.is_empty());
    let (_, v) = b
        .request_as(
            Some(&acme),
            reqwest::Method::POST,
            "/api/v1/kv",
            Some(&body(json!([get("cfg", "k")]))),
        )
        .await;
    let results = wire::read::<KvAnswer>(&v).results;
    assert_eq!(
        wire::read::<KvGot>(&results[0]).value,
        Some(json!("acme's"))
    );
    // Writes need read-write.
    let ro = token("read-only").tenant("acme").mint();
    let (s, _) = b
        .request_as(
            Some(&ro),
            reqwest::Method::POST,
            "/api/v1/kv",
            Some(&body(json!([get("cfg", "k")]))),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

// ---------------------------------------------------------------- the transaction rider

#[tokio::test]
async fn the_kv_rider_commits_with_the_ack_and_answers_after_the_operations() {
    let b = broker().await;
    let (partition, lease, txid) = b.popped("kvtx").await;
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({
                "operations": [
                    {"type": "ack", "transactionId": txid, "partitionId": partition, "status": "completed"},
                    {"type": "push", "items": [{"queue": "kvtx.out", "payload": {"n": 1}, "transactionId": "out-1"}]},
                ],
                "requiredLeases": [lease],
                "kv": [
                    {"op": "putIfAbsent", "ns": "seen", "key": txid, "value": true, "ttlSeconds": 3600, "required": true},
                    {"op": "incr", "ns": "stats", "key": "handled", "forever": true},
                    get("seen", &txid),
                ],
            }),
        )
        .await;
    let t: Transacted = wire::read(&v);
    assert_eq!((s, t.success), (StatusCode::OK, true), "{v}");
    let results = &t.results;
    assert_eq!(results.len(), 5);
    assert_eq!(
        (
            wire::read::<wire::TxAcked>(&results[0]).kind.as_str(),
            wire::read::<wire::TxPushed>(&results[1]).kind.as_str()
        ),
        ("ack", "push")
    );
    let riders: Vec<TxRider> = results[2..].iter().map(wire::read).collect();
    for (i, r) in riders.iter().enumerate() {
        assert_eq!((r.index, r.kind.as_str()), (i + 2, "kv"), "{r:?}");
    }
    assert!(wire::read::<KvWritten>(&riders[0].result).applied);
    assert_eq!(
        wire::read::<KvWritten>(&riders[1].result).value,
        Some(json!(1))
    );
    assert!(wire::read::<KvGot>(&riders[2].result).found);
    assert_eq!(got(&b, "stats", "handled").await.value, Some(json!(1)));
}

#[tokio::test]
async fn a_lost_kv_precondition_rolls_the_bundle_back_and_is_answered_not_raised() {
    let b = broker().await;
    let (partition, lease, txid) = b.popped("kvgate").await;
    one(&b, put("seen", &txid, json!("earlier"))).await;
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({
                "operations": [
                    {"type": "ack", "transactionId": txid, "partitionId": partition, "status": "completed"},
                    {"type": "push", "items": [{"queue": "kvgate.out", "payload": 1, "transactionId": "gated"}]},
                ],
                "requiredLeases": [lease],
                "kv": [
                    {"op": "incr", "ns": "stats", "key": "n", "forever": true},
                    {"op": "putIfAbsent", "ns": "seen", "key": txid, "value": true, "forever": true, "required": true},
                ],
            }),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let t: Transacted = wire::read(&v);
    assert!(!t.success);
    assert_eq!(t.reason.as_deref(), Some("kv_precondition"));
    let p = t.precondition.expect("the failed precondition");
    assert_eq!(
        p.failed_index, 3,
        "two operations, then the second KV op: {v}"
    );
    assert_eq!(
        (p.kv_reason.as_str(), p.value, p.version),
        ("version", json!("earlier"), 1)
    );
    // Nothing of the bundle happened: the message is still leased, not acked; no push; no incr.
    assert!(!got(&b, "stats", "n").await.found);
    // The push's queue is not there, or is there with nothing in it.
    let (s, resources) = b.get("/api/v1/resources/queues/kvgate.out").await;
    if s != StatusCode::NOT_FOUND {
        assert_eq!(s, StatusCode::OK, "{resources}");
        let detail: wire::QueueDetail = wire::read(&resources);
        assert_eq!(detail.totals.total, 0, "{resources}");
    }
    let (s, v) = b
        .post(
            "/api/v1/ack",
            json!({"transactionId": txid, "partitionId": partition, "leaseId": lease, "status": "completed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "the ack is still to be made: {v}");
    let acked: Vec<wire::Acked> = wire::read(&v);
    assert!(acked[0].success, "{v}");
    assert!(!acked[0].noop, "{v}");
}

#[tokio::test]
async fn a_kv_only_bundle_is_accepted_and_get_prefix_is_refused_in_a_bundle() {
    let b = broker().await;
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [], "requiredLeases": [], "kv": [put("solo", "k", json!(1))]}),
        )
        .await;
    let t: Transacted = wire::read(&v);
    assert_eq!((s, t.success), (StatusCode::OK, true), "{v}");
    assert_eq!(wire::read::<TxRider>(&t.results[0]).index, 0);
    let (s, v) = b
        .post(
            "/api/v1/transaction",
            json!({"operations": [], "kv": [{"op": "getPrefix", "ns": "solo", "prefix": "k"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"].as_str().unwrap().contains("getPrefix"), "{v}");
    // Without riders, an empty bundle is still Queen's 400.
    let (s, v) = b
        .post("/api/v1/transaction", json!({"operations": []}))
        .await;
    assert_eq!(
        (s, v["error"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("operations array cannot be empty")
        )
    );
}

#[tokio::test]
async fn the_metrics_count_reads_writes_refusals_and_rollbacks_per_tenant() {
    let b = broker().await;
    kv(&b, json!([put("m", "a", json!(1)), get("m", "a"), {"op": "getMany", "ns": "m", "keys": ["a"]}])).await;
    one(
        &b,
        json!({"op": "putIfAbsent", "ns": "m", "key": "a", "value": 2, "forever": true}),
    )
    .await;
    let (s, _) = refused(
        &b,
        json!([{"op": "delete", "ns": "m", "key": "zz", "required": true}]),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (_, m) = b.get("/api/v1/metrics/queues").await;
    let m = m.as_str().unwrap();
    for (series, want) in [
        ("regent_kv_reads_total{tenant=\"default\"}", 2.0),
        ("regent_kv_writes_total{tenant=\"default\"}", 1.0),
        ("regent_kv_refused_total{tenant=\"default\"}", 1.0),
        ("regent_kv_rollbacks_total{tenant=\"default\"}", 1.0),
    ] {
        assert_eq!(crate::support::sample(m, series), want, "{series}");
    }
}
