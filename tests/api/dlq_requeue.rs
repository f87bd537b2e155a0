//! Dead letters requeued and deleted in bulk (`POST /api/v1/dlq/requeue`, `/dlq/delete`):
//! by ids and by filter, dry runs, duplicates and gone dead letters, refusals, and one
//! transaction per call.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::push_pop::woken_now;
use crate::python_client::FLOW_KEY;
use crate::support::{broker, broker_with, layout, Broker};
use crate::wire::{
    self, BulkAnswer, DeadLetter, DeadLetters, DeadLettersDeleted, DeadLettersRequeued,
    MessageTraces, Popped, PoppedMessage, Pushed,
};
use regent::store::Layout;

const REQUEUE: &str = "/api/v1/dlq/requeue";
const DELETE: &str = "/api/v1/dlq/delete";

/// Pushes `txids` to a partition and dead-letters each of them in `group` with `reason`, one
/// pop and one `dlq` ack at a time. Returns the partition id.
async fn dead_letter(
    b: &Broker,
    queue: &str,
    partition: &str,
    group: &str,
    txids: &[&str],
    reason: &str,
) -> String {
    b.push(queue, partition, txids).await;
    file(b, queue, partition, group, txids.len(), reason).await
}

/// Dead-letters the next `n` messages `group` pops from a partition.
async fn file(
    b: &Broker,
    queue: &str,
    partition: &str,
    group: &str,
    n: usize,
    reason: &str,
) -> String {
    let mut pid = String::new();
    for _ in 0..n {
        let path = format!(
            "/api/v1/pop/queue/{queue}/partition/{partition}?wait=false&batch=1&consumerGroup={group}"
        );
        let (s, v) = b.get(&path).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let pop: Popped = wire::read(&v);
        let m = pop.messages.first().expect("a message");
        pid = m.partition_id.clone();
        let ack = json!([{"transactionId": m.transaction_id, "partitionId": pid,
                          "leaseId": pop.lease_id, "status": "dlq", "error": reason}]);
        let r = b.acked(Some(group), ack).await;
        assert!(r[0].dlq, "{r:?}");
    }
    pid
}

/// The tenant's dead letters, newest failure first.
async fn listed(b: &Broker, query: &str) -> Vec<DeadLetter> {
    let (s, v) = b.get(&format!("/api/v1/dlq?limit=1000&{query}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read::<DeadLetters>(&v).messages
}

/// The dead-letter id of the listed dead letter of `txid` in `group`.
async fn dead_letter_id(b: &Broker, txid: &str, group: &str) -> i64 {
    listed(b, "")
        .await
        .iter()
        .find(|d| d.transaction_id == txid && d.consumer_group == group)
        .map(|d| d.dead_letter_id)
        .unwrap_or_else(|| panic!("a dead letter of {txid} in {group}"))
}

async fn call(b: &Broker, route: &str, body: Value) -> Value {
    let (s, v) = b.post(route, body).await;
    assert_eq!(s, StatusCode::OK, "{route}: {v}");
    v
}

/// A requeue's answer, read.
fn requeued(v: &Value) -> DeadLettersRequeued {
    wire::read(v)
}

/// The answer's verdicts by transaction id, in answer order.
fn verdicts(v: &Value) -> Vec<(String, String)> {
    wire::read::<BulkAnswer>(v)
        .items
        .into_iter()
        .map(|i| {
            let txid = i.transaction_id.unwrap_or_else(|| "?".to_string());
            (txid, i.verdict)
        })
        .collect()
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(t, v)| (t.to_string(), v.to_string()))
        .collect()
}

/// The counts of an answer: (matched, done, duplicates, gone, more).
fn counts(v: &Value, done: &str) -> (i64, i64, i64, i64, bool) {
    let t = wire::read::<BulkAnswer>(v).tally;
    let n = match done {
        "requeued" => requeued(v).requeued,
        "deleted" => wire::read::<DeadLettersDeleted>(v).deleted,
        _ => panic!("no count {done}"),
    };
    (t.matched, n, t.duplicates, t.gone, t.more)
}

/// What a test compares to show nothing changed: every dead letter, segment, partition
/// offset and trace.
async fn stored(b: &Broker) -> String {
    b.db()
        .await
        .query_one(
            "SELECT concat_ws(E'\\n',
               (SELECT string_agg(id::text, ',' ORDER BY id) FROM dead_letters),
               (SELECT string_agg(concat_ws(':', partition_id, end_offset), ',' ORDER BY partition_id, end_offset) FROM segments),
               (SELECT string_agg(concat_ws(':', id, next_offset), ',' ORDER BY id) FROM partition_heads),
               (SELECT count(*)::text FROM traces),
               (SELECT count(*)::text FROM tx_index))",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

async fn next_offset(b: &Broker, pid: &str) -> i64 {
    b.db()
        .await
        .query_one(
            "SELECT next_offset FROM partition_heads WHERE id = $1::text::uuid",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0)
}

/// The messages a fresh pop of `group` gets from a partition, all of them.
async fn pop_all(b: &Broker, queue: &str, partition: &str, group: &str) -> Vec<PoppedMessage> {
    let path = format!(
        "/api/v1/pop/queue/{queue}/partition/{partition}?wait=false&batch=100&consumerGroup={group}"
    );
    let (s, v) = b.get(&path).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    wire::read::<Popped>(&v).messages
}

#[tokio::test]
async fn requeue_by_ids_appends_the_snapshot_as_a_new_message_with_a_trace() {
    let b = broker().await;
    let trace_id = "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b";
    let (s, v) = b
        .post(
            "/api/v1/push",
            json!({"items": [{"queue": "orders", "partition": "p", "transactionId": "a",
                              "traceId": trace_id, "payload": {"n": 1, "deep": [true, null]}},
                             {"queue": "orders", "partition": "p", "transactionId": "b",
                              "payload": {"n": 2}}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let original = wire::read::<Vec<Pushed>>(&v)[0].message_id.clone().unwrap();
    let pid = file(&b, "orders", "p", "billing", 2, "downstream 502").await;
    let listing = listed(&b, "queue=orders").await;
    assert_eq!(listing.len(), 2);
    let a = dead_letter_id(&b, "a", "billing").await;
    let before = next_offset(&b, &pid).await;

    let v = call(&b, REQUEUE, json!({"ids": [a]})).await;
    assert_eq!(counts(&v, "requeued"), (1, 1, 0, 0, false), "{v}");
    let answer = requeued(&v);
    assert!(!answer.tally.dry_run);
    let item = &answer.items[0];
    let copy_txid = format!("requeue:{original}");
    assert_eq!(item.item.dead_letter_id, a);
    assert_eq!(item.item.transaction_id.as_deref(), Some("a"));
    assert_eq!(item.item.partition_id.as_deref(), Some(pid.as_str()));
    assert_eq!(item.item.consumer_group.as_deref(), Some("billing"));
    assert_eq!(item.item.verdict, "requeued");
    assert_eq!(item.new_transaction_id.as_deref(), Some(copy_txid.as_str()));
    let copy_id = item.message_id.clone().expect("the copy's id");
    assert_ne!(copy_id, original);
    assert_eq!(
        next_offset(&b, &pid).await,
        before + 1,
        "one message appended"
    );
    let left = listed(&b, "").await;
    assert_eq!(left.len(), 1, "only b's dead letter stays: {left:?}");
    assert_eq!(left[0].transaction_id, "b");

    // The group that gave up reads the copy next, payload and trace id as pushed.
    let again = pop_all(&b, "orders", "p", "billing").await;
    assert_eq!(again.len(), 1, "{again:?}");
    let m = &again[0];
    assert_eq!(m.transaction_id, copy_txid);
    assert_eq!(m.id, copy_id);
    assert_eq!(m.data, json!({"n": 1, "deep": [true, null]}));
    assert_eq!(m.trace_id.as_deref(), Some(trace_id));
    // The log is shared: a group that never failed it reads the copy too, after the original.
    let fresh = pop_all(&b, "orders", "p", "audit").await;
    let txids: Vec<&str> = fresh.iter().map(|m| m.transaction_id.as_str()).collect();
    assert_eq!(txids, ["a", "b", copy_txid.as_str()]);

    let (s, t) = b.get(&format!("/api/v1/traces/{pid}/{copy_txid}")).await;
    assert_eq!(s, StatusCode::OK, "{t}");
    let traces = wire::read::<MessageTraces>(&t).traces;
    assert_eq!(traces.len(), 1, "{t}");
    assert_eq!(traces[0].event_type, "requeued");
    assert_eq!(traces[0].consumer_group, "billing");
    assert_eq!(
        traces[0].data,
        json!({"deadLetterId": a, "originalMessageId": original, "originalTransactionId": "a",
               "consumerGroup": "billing", "reason": "downstream 502"})
    );

    // Sent again (an answer lost), the call finds nothing to do and appends nothing.
    let v = call(&b, REQUEUE, json!({"ids": [a]})).await;
    assert_eq!(counts(&v, "requeued"), (1, 0, 0, 1, false), "{v}");
    assert_eq!(requeued(&v).items[0].item.verdict, "gone");
    assert_eq!(next_offset(&b, &pid).await, before + 1);
}

#[tokio::test]
async fn requeue_by_filter_takes_what_the_queue_group_and_reason_match() {
    let b = broker().await;
    let p1 = dead_letter(&b, "q1", "p", "g1", &["a1", "a2"], "timeout").await;
    file(&b, "q1", "p", "g2", 1, "bad schema").await;
    dead_letter(&b, "q1", "other", "g1", &["o1"], "timeout").await;
    dead_letter(&b, "q2", "p", "g1", &["b1"], "timeout").await;

    let v = call(
        &b,
        REQUEUE,
        json!({"queue": "q1", "partition": "p", "consumerGroup": "g1"}),
    )
    .await;
    assert_eq!(counts(&v, "requeued"), (2, 2, 0, 0, false), "{v}");
    assert_eq!(
        verdicts(&v),
        pairs(&[("a1", "requeued"), ("a2", "requeued")]),
        "oldest failure first"
    );
    // Copies follow the original order in the partition.
    let copies: Vec<PoppedMessage> = pop_all(&b, "q1", "p", "g1").await;
    let data: Vec<&Value> = copies.iter().map(|m| &m.data).collect();
    assert_eq!(data, [&json!({"tx": "a1"}), &json!({"tx": "a2"})]);
    assert!(copies.iter().all(|m| m.partition_id == p1));

    // g2 dead-lettered a1 too: a1 already has its copy, so nothing new is appended.
    let v = call(&b, REQUEUE, json!({"reason": "bad schema"})).await;
    assert_eq!(verdicts(&v), pairs(&[("a1", "duplicate")]), "{v}");
    let v = call(&b, REQUEUE, json!({"reason": "timeout", "queue": "q2"})).await;
    assert_eq!(verdicts(&v), pairs(&[("b1", "requeued")]), "{v}");
    let left: Vec<DeadLetter> = listed(&b, "").await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].transaction_id, "o1");
    let v = call(&b, REQUEUE, json!({"reason": "Timeout"})).await;
    assert_eq!(
        counts(&v, "requeued"),
        (0, 0, 0, 0, false),
        "exact match: {v}"
    );
}

#[tokio::test]
async fn requeue_by_time_range_on_the_failure_instant() {
    let b = broker().await;
    dead_letter(&b, "q", "p", "g", &["early1", "early2"], "x").await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let between = chrono::Utc::now().to_rfc3339();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    dead_letter(&b, "q", "p2", "g", &["late"], "x").await;

    let v = call(&b, REQUEUE, json!({"to": between, "dryRun": true})).await;
    assert_eq!(
        verdicts(&v),
        pairs(&[("early1", "requeued"), ("early2", "requeued")])
    );
    let v = call(&b, REQUEUE, json!({"from": between})).await;
    assert_eq!(verdicts(&v), pairs(&[("late", "requeued")]), "{v}");
    let far = "2000-01-01T00:00:00Z";
    let v = call(&b, REQUEUE, json!({"from": far, "to": between})).await;
    assert_eq!(
        verdicts(&v),
        pairs(&[("early1", "requeued"), ("early2", "requeued")])
    );
    assert!(listed(&b, "").await.is_empty());
}

#[tokio::test]
async fn a_dry_run_changes_nothing_and_counts_what_would_happen() {
    let b = broker().await;
    let pid = dead_letter(&b, "q", "p", "g1", &["a", "b"], "r").await;
    file(&b, "q", "p", "g2", 1, "r").await;
    let already = stored(&b).await;

    let dry = call(&b, REQUEUE, json!({"all": true, "dryRun": true})).await;
    assert!(requeued(&dry).tally.dry_run);
    assert_eq!(counts(&dry, "requeued"), (3, 2, 1, 0, false), "{dry}");
    assert_eq!(
        verdicts(&dry),
        pairs(&[("a", "requeued"), ("b", "requeued"), ("a", "duplicate")])
    );
    for i in requeued(&dry).items {
        assert_eq!(i.message_id, None, "nothing appended yet: {i:?}");
    }
    assert_eq!(stored(&b).await, already, "a dry run writes nothing");
    let dry_delete = call(&b, DELETE, json!({"all": true, "dryRun": true})).await;
    assert_eq!(counts(&dry_delete, "deleted"), (3, 3, 0, 0, false));
    assert_eq!(stored(&b).await, already);

    let done = call(&b, REQUEUE, json!({"all": true})).await;
    assert_eq!(counts(&done, "requeued"), (3, 2, 1, 0, false), "{done}");
    assert_eq!(verdicts(&done), verdicts(&dry));
    // The duplicate names the copy its message got.
    let done_items = requeued(&done).items;
    let a_copy = done_items[0].message_id.clone();
    assert_eq!(done_items[2].message_id, a_copy, "{done}");
    assert_eq!(next_offset(&b, &pid).await, 4);
}

#[tokio::test]
async fn the_same_message_dead_lettered_by_two_groups_is_requeued_once() {
    let b = broker().await;
    let pid = dead_letter(&b, "q", "p", "g1", &["a"], "r1").await;
    file(&b, "q", "p", "g2", 1, "r2").await;
    dead_letter(&b, "q", "p", "g1", &["c"], "r1").await;
    file(&b, "q", "p", "g2", 1, "r2").await;

    // In one call: one copy, the other dead letter is its duplicate.
    let (g1, g2) = (
        dead_letter_id(&b, "a", "g1").await,
        dead_letter_id(&b, "a", "g2").await,
    );
    let v = call(&b, REQUEUE, json!({"ids": [g2, g1]})).await;
    assert_eq!(counts(&v, "requeued"), (2, 1, 1, 0, false), "{v}");
    let items = requeued(&v).items;
    assert_eq!(
        (items[0].item.dead_letter_id, items[1].item.dead_letter_id),
        (g2, g1),
        "in the order of the ids sent"
    );
    let copy = items
        .iter()
        .find(|i| i.item.verdict == "requeued")
        .map(|i| i.message_id.clone())
        .unwrap();
    assert!(items.iter().all(|i| i.message_id == copy), "{v}");
    assert_eq!(next_offset(&b, &pid).await, 3, "a, c, one copy of a");

    // In two calls: the second finds the copy of the first.
    let (c1, c2) = (
        dead_letter_id(&b, "c", "g1").await,
        dead_letter_id(&b, "c", "g2").await,
    );
    let first = call(&b, REQUEUE, json!({"ids": [c1]})).await;
    assert_eq!(
        requeued(&first).items[0].item.verdict,
        "requeued",
        "{first}"
    );
    let second = call(&b, REQUEUE, json!({"ids": [c2]})).await;
    assert_eq!(counts(&second, "requeued"), (1, 0, 1, 0, false), "{second}");
    assert_eq!(
        requeued(&second).items[0].message_id,
        requeued(&first).items[0].message_id,
        "the duplicate names the copy"
    );
    assert_eq!(next_offset(&b, &pid).await, 4);
    assert!(listed(&b, "").await.is_empty());
    // Each group reads each copy once.
    for g in ["g1", "g2"] {
        let got = pop_all(&b, "q", "p", g).await;
        assert_eq!(got.len(), 2, "{g}: {got:?}");
    }
}

#[tokio::test]
async fn dead_letters_already_taken_or_whose_queue_is_gone_are_gone() {
    let b = broker().await;
    dead_letter(&b, "keep", "p", "g", &["k"], "r").await;
    dead_letter(&b, "doomed", "p", "g", &["d"], "r").await;
    let (k, d) = (
        dead_letter_id(&b, "k", "g").await,
        dead_letter_id(&b, "d", "g").await,
    );
    let (s, v) = b.delete("/api/v1/resources/queues/doomed").await;
    assert_eq!(s, StatusCode::OK, "{v}");

    let v = call(&b, REQUEUE, json!({"ids": [k, d, 999_999]})).await;
    assert_eq!(counts(&v, "requeued"), (3, 1, 0, 2, false), "{v}");
    let items = requeued(&v).items;
    assert_eq!(items[0].item.verdict, "requeued");
    for i in &items[1..] {
        assert_eq!(i.item.verdict, "gone", "{i:?}");
        assert_eq!((&i.item.partition_id, &i.message_id), (&None, &None));
    }
    let v = call(&b, REQUEUE, json!({"ids": [k]})).await;
    assert_eq!(verdicts(&v), pairs(&[("?", "gone")]), "{v}");
    let v = call(&b, DELETE, json!({"ids": [k, d]})).await;
    assert_eq!(counts(&v, "deleted"), (2, 0, 0, 2, false), "{v}");
    // An id outside the filter is not taken.
    dead_letter(&b, "kept", "p", "g", &["k2"], "r").await;
    let k2 = dead_letter_id(&b, "k2", "g").await;
    let v = call(&b, DELETE, json!({"ids": [k2], "queue": "elsewhere"})).await;
    assert_eq!(counts(&v, "deleted"), (1, 0, 0, 1, false), "{v}");
    assert_eq!(listed(&b, "").await.len(), 1);
}

#[tokio::test]
async fn delete_by_filter_with_a_dry_run_first_and_a_limit() {
    let b = broker().await;
    dead_letter(&b, "q", "p", "g1", &["a", "b", "c"], "r").await;
    file(&b, "q", "p", "g2", 1, "r").await;
    let already = stored(&b).await;

    let dry = call(&b, DELETE, json!({"consumerGroup": "g1", "dryRun": true})).await;
    assert_eq!(counts(&dry, "deleted"), (3, 3, 0, 0, false), "{dry}");
    assert_eq!(
        verdicts(&dry),
        pairs(&[("a", "deleted"), ("b", "deleted"), ("c", "deleted")])
    );
    assert!(dry["items"][0].get("messageId").is_none(), "{dry}");
    assert_eq!(stored(&b).await, already);

    let v = call(&b, DELETE, json!({"consumerGroup": "g1", "limit": 2})).await;
    assert_eq!(counts(&v, "deleted"), (2, 2, 0, 0, true), "{v}");
    assert_eq!(verdicts(&v), pairs(&[("a", "deleted"), ("b", "deleted")]));
    let v = call(&b, DELETE, json!({"consumerGroup": "g1", "limit": 2})).await;
    assert_eq!(counts(&v, "deleted"), (1, 1, 0, 0, false), "{v}");
    let left = listed(&b, "").await;
    assert_eq!(left.len(), 1);
    assert_eq!(
        (
            left[0].transaction_id.as_str(),
            left[0].consumer_group.as_str()
        ),
        ("a", "g2")
    );
    // Deleting dead letters leaves the log alone.
    let v = call(&b, DELETE, json!({"all": true})).await;
    assert_eq!(counts(&v, "deleted"), (1, 1, 0, 0, false));
    assert_eq!(pop_all(&b, "q", "p", "fresh").await.len(), 3);
}

#[tokio::test]
async fn no_selector_and_bad_types_are_400() {
    let b = broker().await;
    dead_letter(&b, "q", "p", "g", &["a"], "r").await;
    let already = stored(&b).await;
    for route in [REQUEUE, DELETE] {
        for body in [
            "",
            "{}",
            r#"{"dryRun": true}"#,
            r#"{"all": false, "limit": 5}"#,
        ] {
            let (s, v) = b.post_raw(route, body).await;
            assert_eq!(
                (s, v),
                (
                    StatusCode::BAD_REQUEST,
                    json!({"error": "ids or a filter is required"})
                ),
                "{route} {body}"
            );
        }
        for (body, error) in [
            (
                json!({"ids": "1"}),
                "ids must be an array of dead-letter ids (integers)",
            ),
            (
                json!({"ids": [1.5]}),
                "ids must be an array of dead-letter ids (integers)",
            ),
            (
                json!({"ids": ["1"]}),
                "ids must be an array of dead-letter ids (integers)",
            ),
            (json!({"queue": 5}), "queue must be a string"),
            (json!({"partition": ["p"]}), "partition must be a string"),
            (
                json!({"consumerGroup": true}),
                "consumerGroup must be a string",
            ),
            (json!({"reason": {}}), "reason must be a string"),
            (
                json!({"from": "yesterday"}),
                "from must be an ISO-8601 timestamp",
            ),
            (
                json!({"to": 1700000000}),
                "to must be an ISO-8601 timestamp",
            ),
            (json!({"all": "true"}), "all must be a boolean"),
            (
                json!({"all": true, "dryRun": 1}),
                "dryRun must be a boolean",
            ),
            (
                json!({"all": true, "limit": 0}),
                "limit must be an integer from 1 to 10000",
            ),
            (
                json!({"all": true, "limit": 10001}),
                "limit must be an integer from 1 to 10000",
            ),
            (
                json!({"all": true, "limit": "5"}),
                "limit must be an integer from 1 to 10000",
            ),
            (json!([1, 2]), "request body must be a JSON object"),
            (
                json!({"all": true, "queu": "q"}),
                "unknown field queu: expected one of ids, queue, partition, consumerGroup, \
                 reason, from, to, all, dryRun, limit",
            ),
        ] {
            let (s, v) = b.post(route, body.clone()).await;
            assert_eq!(
                (s, v),
                (StatusCode::BAD_REQUEST, json!({ "error": error })),
                "{route} {body}"
            );
        }
        let (s, v) = b.post_raw(route, "{\"all\": tru").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
        assert!(
            v["error"].as_str().unwrap().starts_with("Invalid JSON"),
            "{v}"
        );
    }
    assert_eq!(stored(&b).await, already, "nothing refused wrote anything");
    // An empty list of ids selects nothing, not everything.
    let v = call(&b, DELETE, json!({"ids": []})).await;
    assert_eq!(counts(&v, "deleted"), (0, 0, 0, 0, false), "{v}");
    assert_eq!(stored(&b).await, already);
}

/// A requeue across two partitions whose second append fails in PostgreSQL leaves every dead
/// letter in place and appends nothing: one transaction for the whole call.
#[tokio::test]
async fn a_requeue_that_fails_midway_changes_nothing() {
    let b = broker().await;
    let one = dead_letter(&b, "q", "p1", "g", &["a"], "r").await;
    let two = dead_letter(&b, "q", "p2", "g", &["b"], "r").await;
    // Partitions are appended in id order: the second's append fails after the first's.
    let (first, second) = if one < two { (one, two) } else { (two, one) };
    let db = b.db().await;
    if layout().await == Layout::Citus {
        // Citus puts a trigger on a distributed table's shards only when told to.
        db.batch_execute("SET citus.enable_unsafe_triggers = on")
            .await
            .unwrap();
    }
    // One statement per call: Citus sends each on to the workers as it came.
    db.batch_execute(
        "CREATE FUNCTION refuse_p2() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'test: no appends to p2'; END $$",
    )
    .await
    .unwrap();
    db.batch_execute(&format!(
        "CREATE TRIGGER refuse_p2 BEFORE INSERT ON segments FOR EACH ROW
           WHEN (NEW.partition_id = '{second}') EXECUTE FUNCTION refuse_p2()"
    ))
    .await
    .unwrap();
    let already = stored(&b).await;

    let (s, v) = b.post(REQUEUE, json!({"all": true})).await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{v}");
    assert_eq!(stored(&b).await, already, "nothing of the call stayed");
    assert_eq!(listed(&b, "").await.len(), 2);

    db.batch_execute("DROP TRIGGER refuse_p2 ON segments")
        .await
        .unwrap();
    let v = call(&b, REQUEUE, json!({"all": true})).await;
    assert_eq!(counts(&v, "requeued"), (2, 2, 0, 0, false), "{v}");
    assert_eq!(
        (
            next_offset(&b, &first).await,
            next_offset(&b, &second).await
        ),
        (2, 2)
    );
}

#[tokio::test]
async fn a_requeue_wakes_parked_pops_of_the_queue() {
    let b = broker().await;
    dead_letter(&b, "q", "p", "g", &["a"], "r").await;
    let state = b.runtime();
    let waiter = state.wakeups.for_group("default", "q", "g");
    let mut parked = vec![Box::pin(waiter.notified())];
    parked[0].as_mut().enable();
    call(&b, DELETE, json!({"all": true, "dryRun": true})).await;
    assert_eq!(woken_now(&mut parked), 0);
    call(&b, REQUEUE, json!({"all": true})).await;
    assert_eq!(woken_now(&mut parked), 1, "the copy woke a parked pop");
}

#[tokio::test]
async fn requeue_is_refused_under_push_maintenance_and_delete_is_not() {
    let b = broker().await;
    dead_letter(&b, "q", "p", "g", &["a", "b"], "r").await;
    let (s, v) = b
        .post("/api/v1/system/maintenance", json!({"enabled": true}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let already = stored(&b).await;
    for body in [json!({"all": true}), json!({"all": true, "dryRun": true})] {
        let (s, v) = b.post(REQUEUE, body).await;
        assert_eq!(s, StatusCode::CONFLICT, "{v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("Push maintenance is on"),
            "{v}"
        );
    }
    assert_eq!(stored(&b).await, already);
    let a = dead_letter_id(&b, "a", "g").await;
    let v = call(&b, DELETE, json!({"ids": [a]})).await;
    assert_eq!(counts(&v, "deleted"), (1, 1, 0, 0, false));

    let (s, v) = b
        .post("/api/v1/system/maintenance", json!({"enabled": false}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let v = call(&b, REQUEUE, json!({"all": true})).await;
    assert_eq!(verdicts(&v), pairs(&[("b", "requeued")]), "{v}");
}

#[tokio::test]
async fn a_requeue_past_the_stored_message_cap_is_refused_whole() {
    let b = broker_with(|c| {
        c.tenant_limits = Some(json!({"default": {"maxMessages": 3}}).to_string());
    })
    .await;
    dead_letter(&b, "q", "p", "g", &["a", "b"], "r").await;
    let v = call(
        &b,
        REQUEUE,
        json!({"ids": [dead_letter_id(&b, "a", "g").await]}),
    )
    .await;
    assert_eq!(counts(&v, "requeued"), (1, 1, 0, 0, false), "{v}");
    let already = stored(&b).await;
    let (s, v) = b.post(REQUEUE, json!({"all": true})).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert_eq!(v["code"], "quota_exceeded", "{v}");
    assert_eq!(stored(&b).await, already, "refused whole");
}

/// A sealed payload is copied as stored, still sealed, and opens on the way out.
#[tokio::test]
async fn an_encrypted_queues_copy_stays_sealed_and_pops_in_the_clear() {
    let b = broker_with(|c| c.queen_encryption_key = Some(FLOW_KEY.into())).await;
    b.configure("secret", json!({"encryptionEnabled": true}))
        .await;
    let pid = dead_letter(&b, "secret", "p", "g", &["s"], "r").await;
    let v = call(&b, REQUEUE, json!({"queue": "secret"})).await;
    assert_eq!(verdicts(&v), pairs(&[("s", "requeued")]), "{v}");
    let copy_txid = requeued(&v).items[0].new_transaction_id.clone().unwrap();
    let frames: Vec<Vec<u8>> = b
        .db()
        .await
        .query(
            "SELECT frames FROM segments WHERE partition_id = $1::text::uuid ORDER BY end_offset",
            &[&pid],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let copy = regent::store::frames::decode(&frames[1]).unwrap();
    let original = regent::store::frames::decode(&frames[0]).unwrap();
    assert_eq!(copy.transaction_id, copy_txid);
    assert!(copy.encrypted, "still sealed in the log");
    assert_eq!(
        copy.payload.get(),
        original.payload.get(),
        "the envelope as stored"
    );
    let got = pop_all(&b, "secret", "p", "g").await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].data, json!({"tx": "s"}));
}

/// Two calls racing for the same dead letters across two partitions: each dead letter is
/// requeued by exactly one of them, the other finds it gone, and neither fails.
#[tokio::test]
async fn racing_requeues_copy_each_dead_letter_once() {
    let b = broker().await;
    let p1 = dead_letter(&b, "q", "p1", "g", &["a", "b"], "r").await;
    let p2 = dead_letter(&b, "q", "p2", "g", &["c"], "r").await;
    let ids: Vec<i64> = listed(&b, "")
        .await
        .iter()
        .map(|d| d.dead_letter_id)
        .collect();
    let mut reversed = ids.clone();
    reversed.reverse();
    let (one, two) = tokio::join!(
        call(&b, REQUEUE, json!({"all": true})),
        call(&b, REQUEUE, json!({"ids": reversed})),
    );
    let (c1, c2) = (counts(&one, "requeued"), counts(&two, "requeued"));
    assert_eq!(c1.1 + c2.1, 3, "{one}\n{two}");
    assert_eq!(
        c1.3 + c2.3,
        c1.0 + c2.0 - 3,
        "the rest is gone: {one}\n{two}"
    );
    assert_eq!((c1.2, c2.2), (0, 0));
    assert_eq!(
        (next_offset(&b, &p1).await, next_offset(&b, &p2).await),
        (4, 2)
    );
    assert!(listed(&b, "").await.is_empty());
}

/// `GET /api/v1/dlq?reason=` lists (and counts) the dead letters of one reason exactly, as
/// the bulk routes select them.
#[tokio::test]
async fn the_dead_letter_list_filters_by_reason() {
    let b = broker().await;
    dead_letter(&b, "rq", "p", "__QUEUE_MODE__", &["a1", "a2"], "timeout").await;
    dead_letter(&b, "rq", "q", "__QUEUE_MODE__", &["b1"], "bad json").await;
    for (reason, want) in [
        ("timeout", vec!["a2", "a1"]),
        ("bad%20json", vec!["b1"]),
        ("time", vec![]),
    ] {
        let (s, v) = b.get(&format!("/api/v1/dlq?reason={reason}")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let listing: DeadLetters = wire::read(&v);
        let got: Vec<&str> = listing
            .messages
            .iter()
            .map(|d| d.transaction_id.as_str())
            .collect();
        assert_eq!(
            (got, listing.total),
            (want.clone(), want.len() as i64),
            "{reason}: {v}"
        );
    }
    let dry = call(
        &b,
        "/api/v1/dlq/requeue",
        json!({"reason": "timeout", "dryRun": true}),
    )
    .await;
    assert_eq!(
        requeued(&dry).requeued,
        2,
        "the list and the bulk route agree: {dry}"
    );
}
