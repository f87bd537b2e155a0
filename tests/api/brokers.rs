//! Two brokers on one database, as two `regent serve` processes would be: each has its own
//! pool and its own in-memory hints (wakeups, ready lists, sweeps, remembered deliveries).
//! Everything that makes delivery correct lives in PostgreSQL, so leases, cursors and dedup
//! must hold across brokers exactly as they do within one. These tests drive both brokers
//! through HTTP at once and check the outcome against the stored log.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regent::store::frames;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::{acks, broker, Broker};

const QUEUE_MODE: &str = "__QUEUE_MODE__";
const INVALID_LEASE: &str = "invalid or expired lease";

// ------------------------------------------------------------------------------------------
// helpers

/// Broker A on a fresh database, and broker B on the same one.
async fn two_brokers() -> (Broker, Broker) {
    let a = broker().await;
    let b = Broker::attach_with(&a.db_url, |_| {}).await;
    (a, b)
}

/// A broker as its clients see it, cheap to hand to tasks.
#[derive(Clone)]
struct Node {
    name: &'static str,
    url: String,
    http: reqwest::Client,
}

impl Node {
    fn of(name: &'static str, b: &Broker) -> Node {
        Node {
            name,
            url: b.url.clone(),
            http: b.http.clone(),
        }
    }

    async fn answer(&self, req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let res = req.send().await.expect("request sent");
        let status = res.status();
        let v = res.json().await.expect("a JSON answer");
        (status, v)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.answer(self.http.get(format!("{}{path}", self.url)))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.answer(self.http.post(format!("{}{path}", self.url)).json(body))
            .await
    }

    /// Acks every message of a pop answer with `status` under the lease it was popped with.
    async fn ack(&self, group: Option<&str>, messages: &[Value], status: &str) -> Vec<Value> {
        let items = acks(messages, status);
        let (s, v) = self
            .post(
                "/api/v1/ack/batch",
                &json!({"consumerGroup": group, "acknowledgments": items}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "ack via {}: {v}", self.name);
        let out = v.as_array().expect("ack answers an array").clone();
        assert_eq!(out.len(), messages.len(), "{v}");
        out
    }

    async fn extend(&self, lease: &str, seconds: i64) -> Value {
        let (s, v) = self
            .post(
                &format!("/api/v1/lease/{lease}/extend"),
                &json!({"seconds": seconds}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "extend via {}: {v}", self.name);
        v
    }

    async fn transaction(&self, body: Value) -> Value {
        let (s, v) = self.post("/api/v1/transaction", &body).await;
        assert_eq!(s, StatusCode::OK, "transaction via {}: {v}", self.name);
        v
    }
}

fn pop_path(queue: &str, group: Option<&str>, query: &str) -> String {
    match group {
        Some(g) => format!("/api/v1/pop/queue/{queue}?consumerGroup={g}&{query}"),
        None => format!("/api/v1/pop/queue/{queue}?{query}"),
    }
}

fn messages(pop: &Value) -> Vec<Value> {
    pop["messages"].as_array().cloned().unwrap_or_default()
}

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

/// Every partition of `queue` as PostgreSQL holds it: partition id -> transaction ids in
/// offset order. Panics unless the segments tile offsets 0..next_offset with no gap or
/// overlap.
async fn stored_log(b: &Broker, queue: &str) -> BTreeMap<String, Vec<String>> {
    let db = b.db().await;
    let mut log = BTreeMap::new();
    let partitions = db
        .query(
            "SELECT p.id, p.next_offset FROM partition_heads p JOIN queues q ON q.id = p.queue_id
              WHERE q.name = $1",
            &[&queue],
        )
        .await
        .expect("partitions of the queue");
    for p in partitions {
        let (id, next): (Uuid, i64) = (p.get(0), p.get(1));
        let mut ids = Vec::new();
        let segments = db
            .query(
                "SELECT base_offset, end_offset, frames FROM segments
                  WHERE partition_id = $1 ORDER BY base_offset",
                &[&id],
            )
            .await
            .expect("segments of the partition");
        for s in segments {
            let (base, end): (i64, i64) = (s.get(0), s.get(1));
            assert_eq!(
                base,
                ids.len() as i64,
                "partition {id}: gap or overlap at {base}"
            );
            for f in frames::iter(s.get(2)) {
                ids.push(f.expect("frame decodes").transaction_id.to_string());
            }
            assert_eq!(
                end + 1,
                ids.len() as i64,
                "partition {id}: segment ..={end}"
            );
        }
        assert_eq!(next, ids.len() as i64, "partition {id}: next_offset");
        log.insert(id.to_string(), ids);
    }
    log
}

/// The partitions of `queue` whose cursor for `group` is not at the end of the log with its
/// lease released: (partition, next_offset, committed, lease id set).
async fn unfinished(
    b: &Broker,
    queue: &str,
    group: &str,
) -> Vec<(String, i64, Option<i64>, Option<bool>)> {
    b.db()
        .await
        .query(
            "SELECT p.id::text, p.next_offset, c.committed, c.lease_id IS NOT NULL
               FROM partition_heads p JOIN queues q ON q.id = p.queue_id
               LEFT JOIN cursor_state c ON c.partition_id = p.id AND c.consumer_group = $2
              WHERE q.name = $1",
            &[&queue, &group],
        )
        .await
        .expect("cursors of the queue")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .filter(|(_, next, committed, leased)| {
            *committed != Some(next - 1) || *leased != Some(false)
        })
        .collect()
}

/// Waits until `finished` says so, a task ends early (a panic to report), or the deadline.
async fn wait_for<F, Fut>(
    deadline: Duration,
    tasks: &[tokio::task::JoinHandle<()>],
    mut finished: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + deadline;
    while !finished().await && Instant::now() < until && !tasks.iter().any(|t| t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ------------------------------------------------------------------------------------------
// 1. every offset once per group, whichever broker pops or acks

/// One message as a consumer received it.
struct Delivery {
    group: Option<&'static str>,
    partition: String,
    txid: String,
    popped_from: &'static str,
}

/// One acknowledged push.
struct Pushed {
    producer: usize,
    push: usize,
    partition: String,
    txid: String,
}

const SHARED: &str = "shared";
const SHARED_PARTITIONS: usize = 16;

/// Pushes `pushes` requests of `items` messages, spread over the partitions, and returns what
/// the broker acknowledged.
async fn produce(node: Node, producer: usize, pushes: usize, items: usize) -> Vec<Pushed> {
    let mut out = Vec::new();
    for n in 0..pushes {
        let batch: Vec<Value> = (0..items)
            .map(|k| {
                let partition = (producer * 3 + n * items + k) % SHARED_PARTITIONS;
                json!({"queue": SHARED, "partition": format!("p{partition}"),
                       "transactionId": format!("{}{producer}-{n}-{k}", node.name),
                       "payload": {"n": n, "k": k}})
            })
            .collect();
        let (s, v) = node.post("/api/v1/push", &json!({ "items": batch })).await;
        assert_eq!(s, StatusCode::CREATED, "push via {}: {v}", node.name);
        for r in v.as_array().expect("push answers an array") {
            assert_eq!(r["status"], "queued", "{r}");
            out.push(Pushed {
                producer,
                push: n,
                partition: text(&r["partition_id"]),
                txid: text(&r["transaction_id"]),
            });
        }
    }
    out
}

/// A consumer that completes everything it gets, acking every other batch through the
/// other broker (which never saw the lease it acks under).
async fn share(
    node: Node,
    other: Node,
    group: Option<&'static str>,
    partitions: usize,
    seen: Arc<Mutex<Vec<Delivery>>>,
    done: Arc<AtomicBool>,
) {
    let path = pop_path(
        SHARED,
        group,
        &format!("batch=7&partitions={partitions}&wait=true&timeout=1000"),
    );
    let mut pops = 0;
    while !done.load(Ordering::Relaxed) {
        let (s, v) = node.get(&path).await;
        assert_eq!(s, StatusCode::OK, "pop via {}: {v}", node.name);
        let got = messages(&v);
        if got.is_empty() {
            continue;
        }
        // Recorded before the ack: no one can claim these partitions again before the ack
        // releases them, so the journal holds each partition's deliveries in claim order.
        seen.lock().unwrap().extend(got.iter().map(|m| Delivery {
            group,
            partition: text(&m["partitionId"]),
            txid: text(&m["transactionId"]),
            popped_from: node.name,
        }));
        pops += 1;
        let via = if pops % 2 == 0 { &other } else { &node };
        for (m, r) in got.iter().zip(via.ack(group, &got, "completed").await) {
            assert_eq!(
                (&r["success"], &r["noop"], &r["leaseReleased"]),
                (&json!(true), &json!(false), &json!(true)),
                "ack via {} of a message popped from {}: {m}: {r}",
                via.name,
                node.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_on_both_brokers_share_each_offset_once() {
    const PUSHES: usize = 25;
    const ITEMS: usize = 4;
    let (a, b) = two_brokers().await;
    // Far longer than the test: no lease expires, so a second delivery can only be a bug.
    a.configure(SHARED, json!({"leaseTime": 60})).await;
    let nodes = [Node::of("A", &a), Node::of("B", &b)];
    let groups = [None, Some("billing")];

    let seen: Arc<Mutex<Vec<Delivery>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let mut consumers = Vec::new();
    for group in groups {
        for (i, node) in nodes.iter().enumerate() {
            // One consumer claims one partition at a time, the other several under one lease.
            for partitions in [1, 3] {
                consumers.push(tokio::spawn(share(
                    node.clone(),
                    nodes[1 - i].clone(),
                    group,
                    partitions,
                    seen.clone(),
                    done.clone(),
                )));
            }
        }
    }
    let producers: Vec<_> = (0..4)
        .map(|p| tokio::spawn(produce(nodes[p % 2].clone(), p, PUSHES, ITEMS)))
        .collect();
    let mut pushed = Vec::new();
    for p in producers {
        pushed.extend(p.await.unwrap());
    }
    let total = pushed.len();
    assert_eq!(total, 4 * PUSHES * ITEMS);

    wait_for(Duration::from_secs(30), &consumers, || {
        let seen = seen.clone();
        async move {
            let seen = seen.lock().unwrap();
            groups
                .iter()
                .all(|g| seen.iter().filter(|d| d.group == *g).count() >= total)
        }
    })
    .await;
    done.store(true, Ordering::Relaxed);
    for c in consumers {
        c.await.unwrap();
    }

    // The log holds every acknowledged push once, and nothing else.
    let log = stored_log(&a, SHARED).await;
    let offset: HashMap<(&str, &str), usize> = log
        .iter()
        .flat_map(|(p, ids)| {
            ids.iter()
                .enumerate()
                .map(move |(o, t)| ((p.as_str(), t.as_str()), o))
        })
        .collect();
    assert_eq!(offset.len(), total, "logged messages");
    for m in &pushed {
        assert!(
            offset.contains_key(&(m.partition.as_str(), m.txid.as_str())),
            "acknowledged but not logged: {} in {}",
            m.txid,
            m.partition
        );
    }
    // Offsets follow commit order: a producer's later push to a partition, sent after the
    // earlier one was acknowledged, lands behind it.
    let mut last: HashMap<(usize, &str), (usize, usize)> = HashMap::new();
    for m in &pushed {
        let at = offset[&(m.partition.as_str(), m.txid.as_str())];
        if let Some((push, before)) = last.insert((m.producer, &m.partition), (m.push, at)) {
            assert!(
                before < at,
                "producer {} push {push} at offset {before}, push {} at {at} of {}",
                m.producer,
                m.push,
                m.partition
            );
        }
    }

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    for group in groups {
        let label = group.unwrap_or(QUEUE_MODE);
        let mut got: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for d in seen.iter().filter(|d| d.group == group) {
            got.entry(&d.partition).or_default().push(d.txid.clone());
        }
        // Exactly the log, in offset order: no offset twice, none missing, none reordered.
        for (p, ids) in &log {
            let delivered = got.remove(p.as_str()).unwrap_or_default();
            assert_eq!(&delivered, ids, "group {label}, partition {p}");
        }
        assert!(
            got.is_empty(),
            "group {label}: deliveries from unknown partitions"
        );
        let left = unfinished(&a, SHARED, label).await;
        assert!(
            left.is_empty(),
            "group {label}: cursors not at the end: {left:?}"
        );
        for n in &nodes {
            assert!(
                seen.iter()
                    .any(|d| d.group == group && d.popped_from == n.name),
                "group {label}: broker {} delivered nothing, so nothing crossed brokers",
                n.name
            );
        }
    }
}

// ------------------------------------------------------------------------------------------
// 2. a crashed consumer's lease fences its messages until it expires

const FLAKY: &str = "flaky";
const LEASE: Duration = Duration::from_secs(1);
/// Slack for comparing the test's monotonic clock with PostgreSQL's wall clock, which times
/// leases: the two drift apart by far less than this over a few seconds.
const CLOCKS: Duration = Duration::from_millis(5);

/// One pop answer with messages, timed on the test's clock.
struct PopRecord {
    node: &'static str,
    healthy: bool,
    lease: String,
    sent: Duration,
    received: Duration,
    messages: Vec<(String, String)>,
}

/// One ack call, timed on the test's clock.
struct AckRecord {
    node: &'static str,
    lease: String,
    /// When the pop that took the lease was sent: the lease expires no earlier than this
    /// plus its lease time.
    pop_sent: Duration,
    received: Duration,
    outcomes: Vec<((String, String), Value)>,
}

#[derive(Default)]
struct Journal {
    pops: Vec<PopRecord>,
    acks: Vec<AckRecord>,
}

/// One pop of the flaky queue; records it when it delivered something.
async fn timed_pop(
    node: &Node,
    query: &str,
    healthy: bool,
    t0: Instant,
    journal: &Mutex<Journal>,
) -> (Duration, Vec<Value>) {
    let sent = t0.elapsed();
    let (s, v) = node.get(&pop_path(FLAKY, None, query)).await;
    let received = t0.elapsed();
    assert_eq!(s, StatusCode::OK, "pop via {}: {v}", node.name);
    let got = messages(&v);
    if !got.is_empty() {
        journal.lock().unwrap().pops.push(PopRecord {
            node: node.name,
            healthy,
            lease: text(&v["leaseId"]),
            sent,
            received,
            messages: got
                .iter()
                .map(|m| (text(&m["partitionId"]), text(&m["transactionId"])))
                .collect(),
        });
    }
    (sent, got)
}

/// Pops and walks away, `times` times: each lease is left to expire. Short polls, so that it
/// races the workers for each redelivery.
async fn crash(
    node: Node,
    times: usize,
    t0: Instant,
    journal: Arc<Mutex<Journal>>,
    done: Arc<AtomicBool>,
) {
    let mut crashed = 0;
    while crashed < times && !done.load(Ordering::Relaxed) {
        let (_, got) = timed_pop(&node, "batch=4&wait=true&timeout=200", false, t0, &journal).await;
        crashed += usize::from(!got.is_empty());
    }
}

/// Completes everything it gets, acking every other batch through the other broker.
async fn work(
    node: Node,
    other: Node,
    t0: Instant,
    journal: Arc<Mutex<Journal>>,
    done: Arc<AtomicBool>,
) {
    let mut pops = 0;
    while !done.load(Ordering::Relaxed) {
        let (pop_sent, got) =
            timed_pop(&node, "batch=3&wait=true&timeout=500", true, t0, &journal).await;
        if got.is_empty() {
            continue;
        }
        pops += 1;
        let via = if pops % 2 == 0 { &other } else { &node };
        let answer = via.ack(None, &got, "completed").await;
        let received = t0.elapsed();
        journal.lock().unwrap().acks.push(AckRecord {
            node: via.name,
            lease: text(&got[0]["leaseId"]),
            pop_sent,
            received,
            outcomes: got
                .iter()
                .map(|m| (text(&m["partitionId"]), text(&m["transactionId"])))
                .zip(answer)
                .collect(),
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivery_waits_for_the_lease_to_end() {
    let (a, b) = two_brokers().await;
    a.configure(FLAKY, json!({"leaseTime": LEASE.as_secs()}))
        .await;
    let nodes = [Node::of("A", &a), Node::of("B", &b)];
    let mut all = HashSet::new();
    for p in 0..4 {
        for (half, broker) in [&a, &b].into_iter().enumerate() {
            let ids: Vec<String> = (0..6).map(|k| format!("p{p}-{half}-{k}")).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            for r in broker.push(FLAKY, &format!("p{p}"), &refs).await {
                all.insert((text(&r["partition_id"]), text(&r["transaction_id"])));
            }
        }
    }

    let t0 = Instant::now();
    let journal: Arc<Mutex<Journal>> = Arc::default();
    // A first crash on each broker before anyone works, so that there is something to
    // redeliver; later crashes race with the workers.
    for n in &nodes {
        let (_, got) = timed_pop(n, "batch=4&wait=false", false, t0, &journal).await;
        assert!(!got.is_empty(), "the crash on {} got nothing", n.name);
    }
    let done = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        for _ in 0..2 {
            workers.push(tokio::spawn(work(
                n.clone(),
                nodes[1 - i].clone(),
                t0,
                journal.clone(),
                done.clone(),
            )));
        }
    }
    let crashers: Vec<_> = nodes
        .iter()
        .map(|n| tokio::spawn(crash(n.clone(), 2, t0, journal.clone(), done.clone())))
        .collect();
    let db = &a;
    wait_for(Duration::from_secs(20), &workers, || async move {
        unfinished(db, FLAKY, QUEUE_MODE).await.is_empty()
    })
    .await;
    done.store(true, Ordering::Relaxed);
    for t in workers.into_iter().chain(crashers) {
        t.await.unwrap();
    }

    let left = unfinished(&a, FLAKY, QUEUE_MODE).await;
    assert!(left.is_empty(), "not everything was completed: {left:?}");
    let j = journal.lock().unwrap();
    let mut leases = HashSet::new();
    let mut deliveries: HashMap<&(String, String), Vec<&PopRecord>> = HashMap::new();
    for p in &j.pops {
        assert!(
            leases.insert(&p.lease),
            "lease {} handed out twice",
            p.lease
        );
        for m in &p.messages {
            let d = deliveries.entry(m).or_default();
            assert!(
                d.last().is_none_or(|q| q.lease != p.lease),
                "{m:?} twice in one pop"
            );
            d.push(p);
        }
    }
    // Two leases on one message never overlap. Whichever claim came second ran after the
    // first lease expired, which is no earlier than the first pop was sent plus the lease
    // time; the second answer came after that claim.
    let mut redelivered = 0;
    for (m, d) in &deliveries {
        for (i, x) in d.iter().enumerate() {
            for y in &d[i + 1..] {
                redelivered += 1;
                let apart = |first: &PopRecord, second: &PopRecord| {
                    second.received + CLOCKS >= first.sent + LEASE
                };
                assert!(
                    apart(x, y) || apart(y, x),
                    "{m:?} delivered under two live leases: {} via {} sent {:?} answered {:?}, \
                     {} via {} sent {:?} answered {:?}",
                    x.lease,
                    x.node,
                    x.sent,
                    x.received,
                    y.lease,
                    y.node,
                    y.sent,
                    y.received
                );
            }
        }
    }
    assert!(
        redelivered > 0,
        "no crash was redelivered, nothing was tested"
    );
    assert!(
        j.pops.iter().any(|p| !p.healthy && !p.messages.is_empty()),
        "the crashes got nothing"
    );

    let mut completed = HashSet::new();
    for ack in &j.acks {
        for (m, r) in &ack.outcomes {
            if r["success"] == true {
                // Committed: no pop sent after this answer may deliver it again.
                completed.insert(m.clone());
                for p in deliveries.get(m).into_iter().flatten() {
                    assert!(
                        p.sent <= ack.received,
                        "{m:?} acked via {} (answered {:?}) and delivered again by a pop via {} \
                         sent {:?}",
                        ack.node,
                        ack.received,
                        p.node,
                        p.sent
                    );
                }
            } else {
                // A worker's ack is refused only when its own lease ran out: nobody else acks
                // under it.
                assert_eq!(r["error"], INVALID_LEASE, "{m:?}: {r}");
                assert!(
                    ack.received + CLOCKS >= ack.pop_sent + LEASE,
                    "{m:?}: live lease {} refused via {}: popped at {:?}, refused at {:?}",
                    ack.lease,
                    ack.node,
                    ack.pop_sent,
                    ack.received
                );
            }
        }
    }
    assert_eq!(completed, all, "completed by the workers");
}

// ------------------------------------------------------------------------------------------
// 3. one message per transaction id, whichever broker wins

/// (transaction id, status, message id) per item of an answer.
type Verdicts = Vec<(String, String, String)>;

async fn push_ids(node: &Node, queue: &str, ids: &[String]) -> Verdicts {
    let items: Vec<Value> = ids
        .iter()
        .map(|t| json!({"queue": queue, "partition": "hot", "transactionId": t, "payload": {"via": node.name}}))
        .collect();
    let (s, v) = node.post("/api/v1/push", &json!({ "items": items })).await;
    assert_eq!(s, StatusCode::CREATED, "push via {}: {v}", node.name);
    v.as_array()
        .expect("push answers an array")
        .iter()
        .map(|r| {
            (
                text(&r["transaction_id"]),
                text(&r["status"]),
                text(&r["message_id"]),
            )
        })
        .collect()
}

async fn push_in_transaction(node: &Node, queue: &str, ids: &[String]) -> Verdicts {
    let items: Vec<Value> = ids
        .iter()
        .map(|t| json!({"queue": queue, "partition": "hot", "transactionId": t, "payload": {"via": "tx"}}))
        .collect();
    let v = node
        .transaction(json!({"operations": [{"type": "push", "items": items}]}))
        .await;
    assert_eq!(v["success"], true, "transaction via {}: {v}", node.name);
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                text(&r["transactionId"]),
                text(&r["status"]),
                text(&r["messageId"]),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_holds_across_brokers() {
    const QUEUE: &str = "orders";
    const ROUNDS: usize = 30;
    const IDS: usize = 5;
    let (a, b) = two_brokers().await;
    let (na, nb) = (Node::of("A", &a), Node::of("B", &b));
    // The first round also races the creation of the queue and its partition.
    let mut winner: HashMap<String, String> = HashMap::new();
    for round in 0..ROUNDS {
        let ids: Vec<String> = (0..IDS).map(|k| format!("r{round}-{k}")).collect();
        let reversed: Vec<String> = ids.iter().rev().cloned().collect();
        // A third racer on the transaction route, on either broker by turns.
        let third = if round % 2 == 0 { &na } else { &nb };
        let (x, y, z) = tokio::join!(
            push_ids(&na, QUEUE, &ids),
            push_ids(&nb, QUEUE, &reversed),
            push_in_transaction(third, QUEUE, &ids)
        );
        for id in &ids {
            let verdicts: Vec<&(String, String, String)> = x
                .iter()
                .chain(&y)
                .chain(&z)
                .filter(|v| &v.0 == id)
                .collect();
            assert_eq!(verdicts.len(), 3, "{id}: {verdicts:?}");
            let queued: Vec<_> = verdicts.iter().filter(|v| v.1 == "queued").collect();
            assert_eq!(queued.len(), 1, "{id}: one racer stores it: {verdicts:?}");
            for v in &verdicts {
                assert!(v.1 == "queued" || v.1 == "duplicate", "{v:?}");
                assert_eq!(
                    v.2, queued[0].2,
                    "{id}: every verdict names the stored message"
                );
            }
            winner.insert(id.clone(), queued[0].2.clone());
        }
    }

    let log = stored_log(&a, QUEUE).await;
    assert_eq!(log.len(), 1, "one partition: {:?}", log.keys());
    let (pid, ids) = log.iter().next().unwrap();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), ROUNDS * IDS, "messages logged");
    assert_eq!(unique.len(), ids.len(), "a transaction id logged twice");
    assert_eq!(
        a.indexed(Some(pid)).await,
        (ROUNDS * IDS) as i64,
        "index entries"
    );

    // A fresh group reads the partition through the other broker: one message per id, the
    // one the verdicts named.
    let mut read = Vec::new();
    loop {
        let v = b
            .pop(QUEUE, "consumerGroup=audit&batch=1000&autoAck=true")
            .await;
        let got = messages(&v);
        if got.is_empty() {
            break;
        }
        read.extend(got);
    }
    assert_eq!(read.len(), ROUNDS * IDS, "messages delivered");
    for m in &read {
        let t = text(&m["transactionId"]);
        assert_eq!(m["id"].as_str(), winner.get(&t).map(String::as_str), "{m}");
    }
}

// ------------------------------------------------------------------------------------------
// 4. a lease is one fencing token for every broker

fn check_ack(r: &Value, released: bool) {
    assert_eq!(
        (&r["success"], &r["error"], &r["leaseReleased"], &r["noop"]),
        (&json!(true), &Value::Null, &json!(released), &json!(false)),
        "{r}"
    );
}

fn check_refused(r: &Value) {
    assert_eq!(
        (&r["success"], r["error"].as_str()),
        (&json!(false), Some(INVALID_LEASE)),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_on_one_broker_is_fenced_on_the_other() {
    const QUEUE: &str = "fenced";
    let (a, b) = two_brokers().await;
    let (na, nb) = (Node::of("A", &a), Node::of("B", &b));
    // Long enough that the extension below surely lands while the lease is live, even on a
    // loaded machine.
    a.configure(QUEUE, json!({"leaseTime": 2})).await;
    let pid = text(&a.push(QUEUE, "p", &["m1", "m2", "m3"]).await[0]["partition_id"]);
    let pop = a.pop(QUEUE, "batch=3").await;
    assert_eq!(Broker::txids(&pop), vec!["m1", "m2", "m3"]);
    let lease = text(&pop["leaseId"]);
    let got = messages(&pop);

    // Extended through B well past the queue's lease time.
    let e = nb.extend(&lease, 30).await;
    assert_eq!(
        (&e["success"], &e["renewed"]),
        (&json!(true), &json!(1)),
        "{e}"
    );
    tokio::time::sleep(Duration::from_millis(2300)).await;
    for n in [&na, &nb] {
        let (_, v) = n
            .get(&format!("/api/v1/pop/queue/{QUEUE}/partition/p?wait=false"))
            .await;
        assert_eq!(v["error"], "lease_held", "via {}: {v}", n.name);
        let (_, v) = n.get(&pop_path(QUEUE, None, "wait=false")).await;
        assert_eq!(v["error"], "no_available_partition", "via {}: {v}", n.name);
    }

    // A stranger's lease is refused on B and moves nothing.
    let mut forged = got[0].clone();
    forged["leaseId"] = json!(Uuid::now_v7().to_string());
    check_refused(&nb.ack(None, &[forged], "completed").await[0]);
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((-1, true, 0)));

    // A still resolves acks under its lease, though the lease outlived the time A recorded.
    check_ack(&na.ack(None, &got[..1], "completed").await[0], false);
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((0, true, 0)));

    // B hands the second message forward in a transaction fenced by A's lease; a bundle
    // naming a stranger's lease beside it is refused whole.
    let ack_m2 =
        json!({"type": "ack", "transactionId": "m2", "partitionId": pid, "status": "completed"});
    let refused = nb
        .transaction(json!({
            "operations": [ack_m2.clone(), {"type": "push", "items": [{"queue": "next", "transactionId": "n0"}]}],
            "requiredLeases": [lease, Uuid::now_v7().to_string()]}))
        .await;
    assert_eq!(
        (&refused["success"], refused["error"].as_str()),
        (
            &json!(false),
            Some("ACK operation failed: invalid or expired lease")
        ),
        "{refused}"
    );
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((0, true, 0)));
    let v = nb
        .transaction(json!({
            "operations": [ack_m2, {"type": "push", "items": [{"queue": "next", "transactionId": "n2"}]}],
            "requiredLeases": [lease]}))
        .await;
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(
        (
            &v["results"][0]["success"],
            &v["results"][0]["leaseReleased"]
        ),
        (&json!(true), &json!(false)),
        "{v}"
    );
    assert_eq!(v["results"][1]["status"], "queued", "{v}");
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((1, true, 0)));

    // The last message on B ends the lease; then it fences nothing and renews nothing.
    check_ack(&nb.ack(None, &got[2..], "completed").await[0], true);
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((2, false, 0)));
    check_refused(&na.ack(None, &got[2..], "failed").await[0]);
    check_refused(&nb.ack(None, &got[2..], "completed").await[0]);
    let e = na.extend(&lease, 30).await;
    assert_eq!(
        (&e["success"], &e["renewed"]),
        (&json!(false), &json!(0)),
        "{e}"
    );
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((2, false, 0)));

    // A lease that expired on A is dead on B too, and the message goes to B's next pop.
    a.push(QUEUE, "p", &["m4"]).await;
    let pop = a.pop(QUEUE, "batch=3").await;
    assert_eq!(Broker::txids(&pop), vec!["m4"]);
    let expired = messages(&pop);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    check_refused(&nb.ack(None, &expired, "completed").await[0]);
    let e = nb.extend(&text(&pop["leaseId"]), 30).await;
    assert_eq!(
        (&e["success"], e["error"].as_str()),
        (&json!(false), Some("Lease already expired")),
        "{e}"
    );
    let v = nb
        .transaction(json!({
            "operations": [
                {"type": "ack", "transactionId": "m4", "partitionId": pid, "status": "completed"},
                {"type": "push", "items": [{"queue": "next", "transactionId": "n4"}]}],
            "requiredLeases": [pop["leaseId"]]}))
        .await;
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((2, false, 0)));

    let again = b.pop(QUEUE, "batch=3").await;
    assert_eq!(Broker::txids(&again), vec!["m4"]);
    assert_ne!(again["leaseId"], pop["leaseId"]);
    let fresh = messages(&again);
    check_refused(&na.ack(None, &expired, "completed").await[0]);
    check_ack(&na.ack(None, &fresh, "completed").await[0], true);
    assert_eq!(a.cursor(&pid, QUEUE_MODE).await, Some((3, false, 0)));

    // Only the committed bundle pushed anything.
    let next = b.pop("next", "batch=10").await;
    assert_eq!(Broker::txids(&next), vec!["n2"], "{next}");
}
