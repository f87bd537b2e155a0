//! The store's statements against a real database, beside the HTTP tests (River's
//! `riverdrivertest` is the model): every statement of `crates/store/sql/*.sql` prepares
//! against the migrated schema, and the claim family's statements, called through
//! `regent_store::claim`, do what their comments say. Messages are pushed through the HTTP
//! API, the one way they are written.

use regent::store::claim::{self, Claim, EmptyReason, Finish, Start, Sweep};
use regent::store::{sql, Layout, Store};
use serde_json::Value;
use uuid::Uuid;

use crate::support::{broker, layout, Broker};

/// Whether a statement is sent on this layout: the `_citus` ones (a family's file or a
/// statement's name) on Citus only.
fn sent_on(layout: Layout, family: &str, name: &str) -> bool {
    let citus_only = family.ends_with("_citus") || name.ends_with("_citus");
    layout == Layout::Citus || !citus_only
}

#[tokio::test]
async fn every_statement_prepares_against_the_migrated_schema() {
    let b = broker().await;
    let layout = layout().await;
    let db = b.db().await;
    let mut prepared = 0;
    for (family, name, text) in sql::ALL {
        if !sent_on(layout, family, name) {
            continue;
        }
        if let Err(e) = db.prepare(text).await {
            panic!("{family}::{name} does not prepare on {layout:?}: {e:?}\n{text}");
        }
        prepared += 1;
    }
    assert!(prepared >= 10, "only {prepared} statements prepared");
}

/// A queue of `n` messages in partition `p`, and what a claim on it needs.
struct Fixture {
    b: Broker,
    store: Store,
    queue_id: Uuid,
    options: Value,
    partition_id: Uuid,
}

async fn fixture(queue: &str, n: usize) -> Fixture {
    let b = broker().await;
    let txids: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    let txids: Vec<&str> = txids.iter().map(String::as_str).collect();
    b.push(queue, "p", &txids).await;
    let db = b.db().await;
    let row = db
        .query_one(
            "SELECT q.id, q.options, p.id AS partition_id FROM queues q
               JOIN partitions p ON p.queue_id = q.id WHERE q.name = $1 AND p.name = 'p'",
            &[&queue],
        )
        .await
        .unwrap();
    Fixture {
        store: Store::connect(&b.db_url, 2, layout().await).unwrap(),
        queue_id: row.get("id"),
        options: row.get("options"),
        partition_id: row.get("partition_id"),
        b,
    }
}

impl Fixture {
    fn claim<'a>(&self, group: &'a str, leases: &'a [Uuid], batch: i64) -> Claim<'a> {
        Claim {
            queue_id: self.queue_id,
            leases,
            partition: None,
            group,
            max_partitions: leases.len() as i64,
            batch,
            lease_seconds: 30,
            window_buffer_seconds: 0,
            hint: &[],
        }
    }

    /// The group's cursor: (committed, lease_id, lease_end).
    async fn cursor(&self, group: &str) -> Option<(i64, Option<Uuid>, Option<i64>)> {
        let db = self.b.db().await;
        db.query_opt(
            "SELECT committed, lease_id, lease_end FROM cursors
              WHERE partition_id = $1 AND consumer_group = $2",
            &[&self.partition_id, &group],
        )
        .await
        .unwrap()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
    }
}

#[tokio::test]
async fn a_sweep_makes_each_missing_cursor_once_where_the_group_starts() {
    let f = fixture("store-sweep", 3).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    let made = claim::sweep(
        &tx,
        f.queue_id,
        "__QUEUE_MODE__",
        None,
        Start::QueueMode,
        Sweep::All,
    )
    .await
    .unwrap();
    let again = claim::sweep(
        &tx,
        f.queue_id,
        "__QUEUE_MODE__",
        None,
        Start::QueueMode,
        Sweep::All,
    )
    .await
    .unwrap();
    // A named group that starts now begins after the three messages already pushed.
    let only = [f.partition_id];
    let named = claim::sweep(
        &tx,
        f.queue_id,
        "late",
        Some("p"),
        Start::Named(Some(chrono::Utc::now())),
        Sweep::Only(&only),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!((made, again, named), (1, 0, 1));
    let first = f.cursor("__QUEUE_MODE__").await.unwrap().0;
    assert_eq!(
        f.cursor("late").await.unwrap().0,
        first + 3,
        "the named group starts at the end"
    );
}

#[tokio::test]
async fn a_claim_leases_a_batch_reads_its_segments_and_a_finish_trims_it() {
    let f = fixture("store-claim", 5).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    claim::sweep(&tx, f.queue_id, "g", None, Start::Named(None), Sweep::All)
        .await
        .unwrap();
    let lease = [Uuid::now_v7()];
    let claimed = claim::claim(&tx, &f.claim("g", &lease, 2)).await.unwrap();
    assert_eq!(claimed.partitions.len(), 1);
    let p = &claimed.partitions[0];
    assert_eq!(
        (p.id, p.lease_id, p.name.as_str()),
        (f.partition_id, lease[0], "p")
    );
    assert_eq!(
        p.lease_end,
        p.committed + 2,
        "the lease holds the batch of two"
    );
    assert!(!p.segments.is_empty(), "the segments in range are read");
    assert!(p.segments[0].base_offset <= p.committed + 1);
    assert!(p.segments.last().unwrap().end_offset >= p.lease_end);
    // A second claim finds the partition leased.
    let other = [Uuid::now_v7()];
    assert!(claim::claim(&tx, &f.claim("g", &other, 2))
        .await
        .unwrap()
        .partitions
        .is_empty());
    // One message delivered and acked at once (autoAck): the cursor moves past it and the
    // lease is released.
    let finish = Finish {
        partition: p.id,
        committed: p.committed + 1,
        release: true,
        lease_end: p.committed + 1,
        lease: None,
        undo: None,
        held: lease[0],
    };
    claim::finish(&*tx, tx.layout(), "g", &[finish])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let (committed, lease_id, _) = f.cursor("g").await.unwrap();
    assert_eq!((committed, lease_id), (p.committed + 1, None));
}

#[tokio::test]
async fn a_finish_under_a_lease_no_longer_held_changes_nothing() {
    let f = fixture("store-finish-held", 2).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    claim::sweep(&tx, f.queue_id, "g", None, Start::Named(None), Sweep::All)
        .await
        .unwrap();
    let lease = [Uuid::now_v7()];
    let p = claim::claim(&tx, &f.claim("g", &lease, 10))
        .await
        .unwrap()
        .partitions
        .remove(0);
    let stale = Finish {
        partition: p.id,
        committed: p.lease_end,
        release: true,
        lease_end: p.lease_end,
        lease: None,
        undo: None,
        held: Uuid::now_v7(),
    };
    claim::finish(&*tx, tx.layout(), "g", &[stale])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        f.cursor("g").await.unwrap(),
        (p.committed, Some(lease[0]), Some(p.lease_end))
    );
}

#[tokio::test]
async fn a_known_claim_claims_only_while_the_queue_has_the_options_it_knows() {
    if crate::support::single_only("claim_known is one PostgreSQL's").await {
        return;
    }
    let f = fixture("store-known", 3).await;
    {
        let mut conn = f.store.client().await.unwrap();
        let tx = conn.begin().await.unwrap();
        claim::sweep(&tx, f.queue_id, "g", None, Start::Named(None), Sweep::All)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let conn = f.store.client().await.unwrap();
    let lease = [Uuid::now_v7()];
    let stale = serde_json::json!({"leaseTime": 1});
    let hint = [f.partition_id];
    let mut hinted = f.claim("g", &lease, 10);
    hinted.hint = &hint;
    assert!(claim::claim_known(&conn, &hinted, &stale)
        .await
        .unwrap()
        .is_none());
    assert!(claim::claim_known(&conn, &f.claim("g", &lease, 10), &stale)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        f.cursor("g").await.unwrap().1,
        None,
        "a stale queue is not claimed"
    );
    let claimed = claim::claim_known(&conn, &hinted, &f.options)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        claimed.partitions.len(),
        1,
        "the hinted partition is claimed"
    );
    assert_eq!(f.cursor("g").await.unwrap().1, Some(lease[0]));
    // Leased now: the walk finds nothing, and says the queue is as known.
    let again = claim::claim_known(&conn, &f.claim("g", &lease, 10), &f.options)
        .await
        .unwrap();
    assert!(again.unwrap().partitions.is_empty());
}

#[tokio::test]
async fn an_empty_partition_pop_is_explained() {
    let f = fixture("store-diagnose", 1).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    let reason = |name: &'static str, window: i64| {
        let tx = &tx;
        let queue = f.queue_id;
        async move {
            claim::diagnose_empty(tx, queue, name, "g", window)
                .await
                .unwrap()
        }
    };
    assert_eq!(reason("nope", 0).await, EmptyReason::PartitionNotFound);
    assert_eq!(reason("p", 0).await, EmptyReason::NothingReadable);
    assert_eq!(
        reason("p", 3600).await,
        EmptyReason::WindowBufferActive {
            partition_id: f.partition_id
        }
    );
    claim::sweep(&tx, f.queue_id, "g", None, Start::Named(None), Sweep::All)
        .await
        .unwrap();
    let lease = [Uuid::now_v7()];
    claim::claim(&tx, &f.claim("g", &lease, 1)).await.unwrap();
    assert_eq!(reason("p", 0).await, EmptyReason::LeaseHeld);
}
