//! The store's statements against a real database, beside the HTTP tests (River's
//! `riverdrivertest` is the model): every statement of `crates/store/sql/*.sql` prepares
//! against the migrated schema, and the statements of the claim, cursor, seek, key/value,
//! timer, overview, series and fleet families and a connection's session settings, called
//! through `regent_store`, do what their comments say. Messages are pushed through the HTTP
//! API, the one way they are written.

use chrono::{Duration, Utc};
use regent::rules::tx_hash::tx_hash;
use regent::store::claim::{self, Claim, EmptyReason, Finish, Start, Sweep};
use regent::store::seek::{self, Seek, SeekTo};
use regent::store::{cursor, kv, sql, timers, Layout, Store};
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
        // A batch (several statements sent at once, `batch_execute`) prepares one by one.
        for statement in batch(text) {
            if let Err(e) = db.prepare(statement).await {
                panic!("{family}::{name} does not prepare on {layout:?}: {e:?}\n{statement}");
            }
        }
        prepared += 1;
    }
    assert!(prepared >= 10, "only {prepared} statements prepared");
}

/// The statements of a section: one, or those of a batch, each of which ends a line with `;`
/// (before any `--` comment the line ends with; the last statement's `;` is left off by
/// build.rs). A comment after the `;` goes with the next statement.
fn batch(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let code = line.find("--").map_or(line, |c| &line[..c]).trim_end();
        if code.ends_with(';') {
            out.push(&text[start..at + code.len() - 1]);
            let rest = &line[code.len()..];
            start = if rest.trim().is_empty() {
                at + line.len()
            } else {
                at + code.len()
            };
        }
        at += line.len();
    }
    out.push(&text[start..]);
    out
}

#[test]
fn a_batch_is_split_into_its_statements() {
    assert_eq!(batch("SELECT 1"), vec!["SELECT 1"]);
    assert_eq!(
        batch("-- a;\nSET a = 1;\nSET b = 2"),
        vec!["-- a;\nSET a = 1", "SET b = 2"]
    );
    assert_eq!(
        batch("SET a = 1; -- (variant)\nSET b = 2;\nSET c = 3 -- (variant)"),
        vec![
            "SET a = 1",
            " -- (variant)\nSET b = 2",
            "SET c = 3 -- (variant)"
        ]
    );
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
    /// Makes `group`'s cursors on every partition, from the first message.
    async fn join(&self, tx: &regent::store::Tx<'_>, group: &str) {
        let (start, all) = (Start::Named(None), Sweep::All);
        claim::sweep(tx, self.queue_id, group, None, start, all)
            .await
            .unwrap();
    }

    /// The queue's tenant.
    async fn tenant(&self) -> String {
        let db = self.b.db().await;
        db.query_one("SELECT tenant FROM queues WHERE id = $1", &[&self.queue_id])
            .await
            .unwrap()
            .get(0)
    }

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
            after: None,
        }
    }

    /// One claim of `group` under a fresh lease of `batch` messages: the lease and the one
    /// partition it took.
    async fn claim_one(
        &self,
        tx: &regent::store::Tx<'_>,
        group: &str,
        batch: i64,
    ) -> (Uuid, claim::ClaimedPartition) {
        let lease = [Uuid::now_v7()];
        let mut claimed = claim::claim(tx, &self.claim(group, &lease, batch))
            .await
            .unwrap();
        (lease[0], claimed.partitions.remove(0))
    }

    /// One message of `group` claimed and acked at once: two cursor-log rows.
    async fn claim_and_ack(&self, tx: &regent::store::Tx<'_>, group: &str) {
        let (lease, p) = self.claim_one(tx, group, 1).await;
        claim::finish(&**tx, group, &[acked_one(&p, lease)])
            .await
            .unwrap();
    }

    /// The group's cursor: (committed, lease_id, lease_end).
    async fn cursor(&self, group: &str) -> Option<(i64, Option<Uuid>, Option<i64>)> {
        let db = self.b.db().await;
        db.query_opt(
            "SELECT committed, lease_id, lease_end FROM cursor_state
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
    // Twice: the second sweep finds the cursor the first made.
    let mut sweeps = Vec::new();
    for _ in 0..2 {
        let all = Sweep::All;
        let n = claim::sweep(
            &tx,
            f.queue_id,
            "__QUEUE_MODE__",
            None,
            Start::QueueMode,
            all,
        );
        sweeps.push(n.await.unwrap());
    }
    let (made, again) = (sweeps[0], sweeps[1]);
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

/// The finish of a claim whose first message was delivered and acked at once (autoAck): the
/// cursor moves past it and the lease `held` is released.
fn acked_one(p: &claim::ClaimedPartition, held: Uuid) -> Finish {
    Finish {
        partition: p.id,
        committed: p.committed + 1,
        release: true,
        lease_end: p.committed + 1,
        lease: None,
        undo: None,
        held,
    }
}

#[tokio::test]
async fn a_claim_leases_a_batch_reads_its_segments_and_a_finish_trims_it() {
    let f = fixture("store-claim", 5).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    f.join(&tx, "g").await;
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
    claim::finish(&*tx, "g", &[acked_one(p, lease[0])])
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
    f.join(&tx, "g").await;
    let (lease, p) = f.claim_one(&tx, "g", 10).await;
    let stale = Finish {
        partition: p.id,
        committed: p.lease_end,
        release: true,
        lease_end: p.lease_end,
        lease: None,
        undo: None,
        held: Uuid::now_v7(),
    };
    claim::finish(&*tx, "g", &[stale]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        f.cursor("g").await.unwrap(),
        (p.committed, Some(lease), Some(p.lease_end))
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
    f.join(&tx, "g").await;
    let lease = [Uuid::now_v7()];
    claim::claim(&tx, &f.claim("g", &lease, 1)).await.unwrap();
    assert_eq!(reason("p", 0).await, EmptyReason::LeaseHeld);
}

#[tokio::test]
async fn an_ack_locks_the_cursor_resolves_its_ids_and_writes_the_cursor_back() {
    let f = fixture("store-cursor", 3).await;
    let tenant = f.tenant().await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    f.join(&tx, "g").await;
    let pid = f.partition_id.to_string();
    let hashes = [
        tx_hash(f.partition_id, "m1"),
        tx_hash(f.partition_id, "nope"),
    ];
    let locked = cursor::lock(&tx, &tenant, &pid, "g", &hashes)
        .await
        .unwrap()
        .expect("the group's cursor");
    let first = locked.committed + 1;
    assert_eq!(
        (locked.partition_id, locked.lease_id, locked.live),
        (f.partition_id, None, false)
    );
    assert_eq!(locked.next_offset, first + 3);
    assert_eq!(
        locked.offsets,
        vec![Some(first + 1), None],
        "m1 is the second message; an unknown id resolves nowhere"
    );
    assert_eq!(
        cursor::resolve(&tx, f.partition_id, &hashes).await.unwrap(),
        locked.offsets
    );
    assert!(cursor::lock(&tx, "someone-else", &pid, "g", &hashes)
        .await
        .unwrap()
        .is_none());
    assert!(cursor::lock(&tx, &tenant, &pid, "other", &hashes)
        .await
        .unwrap()
        .is_none());
    cursor::write(&tx, f.partition_id, "g", first + 1, 2, true)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(f.cursor("g").await.unwrap().0, first + 1);
    let db = f.b.db().await;
    let retries: i32 = db
        .query_one(
            "SELECT retry_count FROM cursor_state WHERE partition_id = $1 AND consumer_group = 'g'",
            &[&f.partition_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(retries, 2);
}

/// An ack that waited for another writer's turn on its cursor reads the cursor as its
/// statement's snapshot had it, before that writer committed ("A stale read loses" in
/// sql/functions.sql). Here the other writer extends the lease: the one-statement ack meets
/// the extension's row, appends nothing, and leaves the ack to the full path, which takes it.
/// (Appended over the extension, the ack failed on the log's primary key.)
#[tokio::test]
async fn an_ack_that_waited_for_an_extension_of_its_lease_is_taken() {
    let b = broker().await;
    b.push("stale-extend", "p", &["m1"]).await;
    let v = b.pop("stale-extend", "batch=1").await;
    let pid = v["messages"][0]["partitionId"]
        .as_str()
        .unwrap()
        .to_string();
    let lease = v["messages"][0]["leaseId"]
        .as_str()
        .or(v["leaseId"].as_str());
    let lease = Uuid::parse_str(lease.expect("a lease")).unwrap();
    let mut db = b.db().await;
    let extending = db.transaction().await.unwrap();
    let tenant: String = extending
        .query_one(
            "SELECT tenant FROM partitions WHERE id = $1::text::uuid",
            &[&pid],
        )
        .await
        .unwrap()
        .get(0);
    let extended = extending
        .query(
            "SELECT * FROM regent_extend($1, 60, $2)",
            &[&lease, &tenant],
        )
        .await
        .unwrap();
    assert_eq!(extended.len(), 1, "the extension holds the cursor's turn");
    let commit = async {
        // The ack's statement has begun, and waits for the extension's turn.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        extending.commit().await.unwrap();
    };
    let ((), ()) = tokio::join!(commit, b.ack_all(None, &v));
    let (committed, live, _) = b.cursor(&pid, "__QUEUE_MODE__").await.unwrap();
    assert!(!live, "the lease's range is done");
    assert_eq!(
        committed,
        p_first(&b.db().await, pid.parse().unwrap()).await + 1
    );
}

/// The converse, at the statement: the other writer released the lease while the
/// one-statement ack waited. Read stale, the lease is still live; the statement must append
/// nothing over the release (nor fail), leaving the ack to the full path.
#[tokio::test]
async fn an_ack_that_waited_for_its_lease_to_be_released_is_refused() {
    let f = fixture("store-stale-release", 3).await;
    let tenant = f.tenant().await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    f.join(&tx, "g").await;
    let (lease, p) = f.claim_one(&tx, "g", 3).await;
    tx.commit().await.unwrap();
    drop(conn); // the fixture's pool holds two connections
    let mut holder = f.store.client().await.unwrap();
    let releasing = holder.begin().await.unwrap();
    releasing
        .execute(
            "SELECT 1 FROM cursors WHERE partition_id = $1 AND consumer_group = 'g' FOR UPDATE",
            &[&p.id],
        )
        .await
        .unwrap();
    let acker = f.store.client().await.unwrap();
    let (pid, l, lowest, highest) = (p.id, lease, p.committed + 1, p.lease_end);
    let t = tenant.clone();
    let ack = tokio::spawn(async move {
        let c = cursor::Completion {
            partition: pid,
            group: "g",
            lease: l,
            lowest,
            highest,
        };
        cursor::complete_in_lease(&*acker, layout().await, &t, &[c])
            .await
            .map(|done| done.len())
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!ack.is_finished(), "the ack waits for the release's turn");
    let released = releasing
        .query("SELECT * FROM regent_release($1, $2)", &[&lease, &tenant])
        .await
        .unwrap();
    assert_eq!(released.len(), 1);
    releasing.commit().await.unwrap();
    assert_eq!(
        ack.await.unwrap().unwrap(),
        0,
        "the released lease takes no ack"
    );
    assert_eq!(
        f.cursor("g").await.unwrap(),
        (p.committed, None, Some(p.lease_end))
    );
}

/// Compaction deletes a superseded cursor-log row only once the row that superseded it is
/// older than twice the stale-read bound, and never a cursor's newest row.
#[tokio::test]
async fn compaction_keeps_what_a_stale_reader_may_still_meet() {
    let f = fixture("store-compact", 3).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    f.join(&tx, "g").await;
    for _ in 0..3 {
        f.claim_and_ack(&tx, "g").await;
    }
    tx.commit().await.unwrap();
    let db = f.b.db().await;
    assert_eq!(log_seqs(&db, f.partition_id).await, vec![1, 2, 3, 4, 5, 6]);
    compact_by_blocks(&f.store).await.unwrap();
    assert_eq!(
        log_seqs(&db, f.partition_id).await.len(),
        6,
        "written just now: all kept"
    );
    // Rows 4 and 5 written two minutes ago: what they supersede (1 to 4) may go.
    db.execute(
        "UPDATE cursor_log SET at = $2 \
          WHERE partition_id = $1 AND consumer_group = 'g' AND seq <= 5",
        &[&f.partition_id, &(Utc::now() - Duration::minutes(2))],
    )
    .await
    .unwrap();
    compact_by_blocks(&f.store).await.unwrap();
    assert_eq!(log_seqs(&db, f.partition_id).await, vec![5, 6]);
    let (committed, lease, _) = f.cursor("g").await.unwrap();
    assert_eq!(
        (committed - p_first(&db, f.partition_id).await, lease),
        (3, None)
    );
}

/// A pass of one-block slices reaches every block of a log that spans many, deletes what the
/// rule allows in each, and leaves the cursor's state as it was.
#[tokio::test]
async fn compaction_by_slices_covers_the_whole_log() {
    let f = fixture("store-compact-slices", 3).await;
    let mut conn = f.store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    f.join(&tx, "g").await;
    f.claim_and_ack(&tx, "g").await;
    tx.commit().await.unwrap();
    let db = f.b.db().await;
    let before = f.cursor("g").await.unwrap();
    // `at` grows with `seq`: the two rows written, three minutes ago; 2,000 more stating the
    // same state, all but the newest two minutes ago.
    db.execute(
        "UPDATE cursor_log SET at = now() - interval '3 minutes' WHERE partition_id = $1",
        &[&f.partition_id],
    )
    .await
    .unwrap();
    db.execute(
        "INSERT INTO cursor_log (partition_id, consumer_group, seq, committed, lease_id, \
                                 lease_expires_at, lease_end, retry_count, at) \
         SELECT l.partition_id, l.consumer_group, s, l.committed, l.lease_id, \
                l.lease_expires_at, l.lease_end, l.retry_count, \
                CASE WHEN s = 2002 THEN now() ELSE now() - interval '2 minutes' END \
           FROM cursor_log l, generate_series(3, 2002) s \
          WHERE l.partition_id = $1 AND l.consumer_group = 'g' AND l.seq = 2",
        &[&f.partition_id],
    )
    .await
    .unwrap();
    let blocks: i64 = db
        .query_one("SELECT pg_relation_size('cursor_log') / 8192", &[])
        .await
        .unwrap()
        .get(0);
    // On Citus the coordinator holds no rows: a pass is one statement per shard.
    let citus = f.store.layout() == Layout::Citus;
    assert!(citus || blocks > 5, "the log spans {blocks} blocks");
    let deleted = compact_by_blocks(&f.store).await.unwrap();
    assert_eq!(deleted, 2000);
    assert_eq!(log_seqs(&db, f.partition_id).await, vec![2001, 2002]);
    assert_eq!(f.cursor("g").await.unwrap(), before);
}

/// One compaction pass in slices of one block, as the service's clock makes it without the
/// pauses between slices: how many rows went.
async fn compact_by_blocks(store: &Store) -> Result<u64, regent::store::StoreError> {
    let (mut from, mut total) = (0, 0);
    loop {
        let slice = regent::store::purge::compact_slice(store, from, from + 1).await?;
        total += slice.deleted;
        from += 1;
        if from >= slice.blocks {
            return Ok(total);
        }
    }
}

/// The sequence numbers of group g's cursor-log rows on the partition, ascending.
async fn log_seqs(db: &tokio_postgres::Client, pid: Uuid) -> Vec<i64> {
    let q = "SELECT seq FROM cursor_log WHERE partition_id = $1 AND consumer_group = 'g' \
             ORDER BY seq";
    let rows = db.query(q, &[&pid]).await.unwrap();
    rows.iter().map(|r| r.get::<_, i64>(0)).collect()
}

/// The partition's first offset less one: where a group that starts at the beginning starts.
async fn p_first(db: &tokio_postgres::Client, pid: Uuid) -> i64 {
    db.query_one(
        "SELECT first_offset - 1 FROM partitions WHERE id = $1",
        &[&pid],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn a_seek_to_the_end_moves_only_the_cursors_the_group_has() {
    let f = fixture("store-seek", 4).await;
    let tenant = f.tenant().await;
    {
        let mut conn = f.store.client().await.unwrap();
        let tx = conn.begin().await.unwrap();
        claim::sweep(&tx, f.queue_id, "g", None, Start::Named(None), Sweep::All)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let before = f.cursor("g").await.unwrap().0;
    let conn = f.store.client().await.unwrap();
    let seek = |group: &'static str, queue: &'static str, partition: Option<&'static str>| {
        let (conn, tenant) = (&conn, &tenant);
        async move {
            seek::seek(conn, tenant, queue, group, partition, SeekTo::End)
                .await
                .unwrap()
        }
    };
    match seek("g", "store-seek", None).await {
        Seek::Moved(moved) => assert_eq!(moved.len(), 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(f.cursor("g").await.unwrap().0, before + 4, "on the newest");
    match seek("nobody", "store-seek", Some("p")).await {
        Seek::Moved(moved) => assert!(moved.is_empty(), "no cursor, nothing moves"),
        other => panic!("{other:?}"),
    }
    assert!(f.cursor("nobody").await.is_none());
    assert!(matches!(
        seek("g", "store-seek", Some("nope")).await,
        Seek::NoPartition
    ));
    assert!(matches!(
        seek("g", "store-absent", None).await,
        Seek::NoQueue
    ));
}

#[tokio::test]
async fn kv_inserts_once_updates_in_place_and_ranges_keep_their_bounds() {
    let b = broker().await;
    let store = Store::connect(&b.db_url, 2, layout().await).unwrap();
    let mut conn = store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    let (tenant, ns) = ("store-kv", "ns");
    let k = |key| kv::Key { tenant, ns, key };
    let new = |value, version, ttl_seconds| kv::NewRow {
        value,
        version,
        ttl_seconds,
    };
    assert!(kv::lock(&tx, k("a")).await.unwrap().is_none());
    let a = kv::write(&tx, k("a"), false, &new("1", 1, Some(Some(3600))))
        .await
        .unwrap()
        .expect("inserted");
    assert!(a.expires_at.is_some() && !a.expired);
    assert!(
        kv::write(&tx, k("a"), false, &new("9", 1, None))
            .await
            .unwrap()
            .is_none(),
        "a second insert finds the row and writes nothing"
    );
    let kept = kv::write(&tx, k("a"), true, &new("2", 2, None))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.value.as_str(), kept.version, kept.expires_at),
        ("2", 2, a.expires_at),
        "the expiry is kept"
    );
    let forever = kv::write(&tx, k("a"), true, &new("3", 3, Some(None)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(forever.expires_at, None);
    assert_eq!(kv::lock(&tx, k("a")).await.unwrap().unwrap().value, "3");
    for key in ["ab", "b"] {
        kv::write(&tx, k(key), false, &new("1", 1, None))
            .await
            .unwrap()
            .unwrap();
    }
    let range = |until, keys_only| kv::Range {
        from: "a",
        until,
        after: "a",
        limit: 10,
        keys_only,
    };
    let read = |r: kv::Range<'static>| {
        let tx = &tx;
        async move {
            kv::range(tx, tenant, ns, &r)
                .await
                .unwrap()
                .into_iter()
                .map(|r| (r.key, r.value))
                .collect::<Vec<_>>()
        }
    };
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        read(range(None, false)).await,
        [pair("ab", "1"), pair("b", "1")]
    );
    assert_eq!(read(range(Some("b"), false)).await, [pair("ab", "1")]);
    assert_eq!(
        read(range(None, true)).await,
        [pair("ab", ""), pair("b", "")]
    );
    assert_eq!(read(range(Some("b"), true)).await, [pair("ab", "")]);
    kv::remove(&tx, k("b")).await.unwrap();
    let got = kv::get(&tx, tenant, ns, &["a".into(), "b".into()])
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn a_timer_is_claimed_by_its_key_put_off_and_taken_once_due() {
    let b = broker().await;
    let store = Store::connect(&b.db_url, 2, layout().await).unwrap();
    let (tenant, queue) = ("store-timers", "store-timers-q");
    let mut conn = store.client().await.unwrap();
    let tx = conn.begin().await.unwrap();
    timers::take_turns(&tx, tenant, &[(queue, "k")])
        .await
        .unwrap();
    let claim = |txn| {
        let tx = &tx;
        async move { timers::claim(tx, tenant, queue, "k", txn).await.unwrap() }
    };
    assert!(matches!(claim(None).await, timers::Claim::Absent));
    let timer = timers::NewTimer {
        tenant,
        queue,
        key: "k",
        txn: "t1",
        message_id: Uuid::now_v7(),
        partition: "p",
        payload: "{\"a\":1}",
        producer_sub: None,
        delay_ms: 3_600_000,
    };
    let at = timers::upsert(&tx, &timer).await.unwrap();
    match claim(Some("t1")).await {
        timers::Claim::Mine(p) => assert_eq!((p.txn.as_str(), p.deliver_at), ("t1", at)),
        other => panic!("{other:?}"),
    }
    assert!(matches!(claim(Some("t2")).await, timers::Claim::Absent));
    tx.commit().await.unwrap();

    let peeked = timers::peek(&conn, tenant, queue, "k")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((peeked.txn.as_str(), peeked.attempts), ("t1", 0));
    assert_eq!(
        timers::list(&conn, tenant, queue, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(timers::list(&conn, tenant, queue, Some("k"), 10)
        .await
        .unwrap()
        .is_empty());
    let tx = conn.begin().await.unwrap();
    assert!(timers::take(&tx, tenant, queue, Utc::now(), 10)
        .await
        .unwrap()
        .is_empty());
    let later = at + Duration::hours(1);
    timers::postpone(&tx, tenant, queue, &["k"], &[later], Utc::now())
        .await
        .unwrap();
    assert!(timers::take(&tx, tenant, queue, at, 10)
        .await
        .unwrap()
        .is_empty());
    let taken = timers::take(&tx, tenant, queue, later, 10).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].deliver_at, taken[0].attempts), (later, 1));
    tx.commit().await.unwrap();
    assert!(timers::peek(&conn, tenant, queue, "k")
        .await
        .unwrap()
        .is_none());
}

/// A queue with a namespace and a task of its own (configuring it makes its `Default`
/// partition), five messages over partitions `p` (3) and `q` (2), two of `p`'s leased by a
/// pop: its fixture, and its tenant.
async fn labelled(queue: &str, namespace: &str, task: &str) -> (Fixture, String) {
    let f = fixture(queue, 3).await;
    let (s, v) =
        f.b.post(
            "/api/v1/configure",
            serde_json::json!({"queue": queue, "namespace": namespace, "task": task}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    f.b.push(queue, "q", &["q0", "q1"]).await;
    let popped =
        f.b.get(&format!(
            "/api/v1/pop/queue/{queue}/partition/p?wait=false&batch=2"
        ))
        .await
        .1;
    assert_eq!(Broker::txids(&popped).len(), 2, "{popped}");
    let tenant = f.tenant().await;
    (f, tenant)
}

#[tokio::test]
async fn the_overview_and_rollups_sum_the_counted_queues() {
    use regent::store::overview::{self, Label};
    use regent::store::series::Filter;
    let (f, tenant) = labelled("store-overview", "store-ov-ns", "store-ov-task").await;
    let conn = f.store.client().await.unwrap();
    let filter = Filter {
        queue: Some("store-overview"),
        ..Filter::default()
    };
    // No round has counted the queue yet: it is a queue, with nothing summed.
    let before = overview::overview(&conn, &tenant, &filter).await.unwrap();
    assert_eq!((before.queues, before.partitions), (1, 0));
    assert_eq!(before.stats_age, None);

    f.b.refresh_stats().await;
    let o = overview::overview(&conn, &tenant, &filter).await.unwrap();
    assert_eq!(
        (o.queues, o.namespaces, o.tasks, o.partitions),
        (1, 1, 1, 3)
    );
    let m = o.messages;
    assert_eq!(
        (m.total, m.pending, m.processing, m.completed, m.failed),
        (5, 5, 2, 0, 0)
    );
    assert_eq!(o.dead_letters, 0);
    assert!(o.stats_age.is_some_and(|a| (0.0..60.0).contains(&a)));
    // A filter that names another namespace lets nothing through.
    let none = Filter {
        namespace: Some("store-ov-elsewhere"),
        ..filter
    };
    let o = overview::overview(&conn, &tenant, &none).await.unwrap();
    assert_eq!((o.queues, o.partitions, o.messages.total), (0, 0, 0));

    for (by, label) in [
        (Label::Namespace, "store-ov-ns"),
        (Label::Task, "store-ov-task"),
    ] {
        let rows = overview::rollup(&conn, &tenant, by, 10_000, 0)
            .await
            .unwrap();
        let r = rows
            .iter()
            .find(|r| r.name == label)
            .unwrap_or_else(|| panic!("{label} not rolled up"));
        assert_eq!(
            (
                r.queues,
                r.partitions,
                r.messages.total,
                r.messages.processing
            ),
            (1, 3, 5, 2)
        );
        assert!(rows.windows(2).all(|w| w[0].name < w[1].name), "by name");
        assert!(rows.iter().all(|r| !r.name.is_empty()));
    }
}

#[tokio::test]
async fn partitions_leases_and_dead_letters_are_counted_when_asked() {
    use regent::store::overview;
    use regent::store::series::Filter;
    let (f, tenant) = labelled("store-live", "store-live-ns", "store-live-task").await;
    let conn = f.store.client().await.unwrap();
    let (page, total) = overview::partitions(&conn, &tenant, Some("store-live"), 1, 2)
        .await
        .unwrap();
    assert_eq!(total, 3);
    assert_eq!(page.len(), 1, "a page of one, the third");
    assert_eq!((page[0].name.as_str(), page[0].messages.total), ("q", 2));
    let (page, _) = overview::partitions(&conn, &tenant, Some("store-live"), 10, 0)
        .await
        .unwrap();
    let names: Vec<&str> = page.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Default", "p", "q"]);
    let p = &page[1];
    assert_eq!(p.name, "p");
    assert_eq!((p.messages.total, p.messages.processing), (3, 2));

    let filter = Filter {
        queue: Some("store-live"),
        ..Filter::default()
    };
    let l = overview::leases(&conn, &tenant, &filter).await.unwrap();
    assert_eq!((l.active, l.partitions, l.messages), (1, 1, 2));
    let other = Filter {
        task: Some("store-live-other"),
        ..filter
    };
    let l = overview::leases(&conn, &tenant, &other).await.unwrap();
    assert_eq!((l.active, l.partitions, l.messages), (0, 0, 0));

    // Two dead letters of one reason, one of another, filed by another group from `p`.
    for reason in ["boom", "bang", "boom"] {
        let (s, v) =
            f.b.get("/api/v1/pop/queue/store-live/partition/p?wait=false&batch=1&consumerGroup=dl")
                .await;
        assert!(s.is_success(), "{v}");
        let m = &v["messages"][0];
        let ack = serde_json::json!([{"transactionId": m["transactionId"],
            "partitionId": m["partitionId"], "leaseId": v["leaseId"], "status": "dlq",
            "error": reason}]);
        let r = f.b.ack_batch(Some("dl"), ack).await;
        assert_eq!(r[0]["dlq"], true, "{r:?}");
    }
    let d = overview::dead_summary(&conn, &tenant, &filter)
        .await
        .unwrap();
    assert_eq!((d.total, d.partitions), (3, 1));
    assert_eq!(
        d.top_errors,
        vec![("boom".to_string(), 2), ("bang".to_string(), 1)]
    );
    let d = overview::dead_summary(&conn, &tenant, &other)
        .await
        .unwrap();
    assert_eq!((d.total, d.top_errors.len()), (0, 0));
}

#[tokio::test]
async fn the_series_sums_what_was_counted_per_span_bucket_and_queue() {
    use regent::store::series::{self, Filter, Span};
    let f = fixture("store-series", 3).await;
    let popped = f.b.pop("store-series", "batch=2").await;
    assert_eq!(Broker::txids(&popped).len(), 2, "{popped}");
    f.b.ack_all(None, &popped).await;
    f.b.flush_series().await;
    let tenant = f.tenant().await;
    let conn = f.store.client().await.unwrap();
    let counted = |c: &series::Counts| (c.pushed, c.delivered, c.completed, c.failed);

    // To the second: a bucket starts at `from`, as the database (microseconds) has it.
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 0);
    let filter = Filter {
        queue: Some("store-series"),
        ..Filter::default()
    };
    let span = Span {
        filter,
        from: now - Duration::minutes(30),
        to: now + Duration::minutes(30),
        bucket_minutes: 60,
    };
    let all = series::buckets(&conn, &tenant, &span, false).await.unwrap();
    assert_eq!(all.len(), 1, "one bucket: {all:?}");
    assert_eq!((all[0].0, all[0].1.as_deref()), (span.from, None));
    assert_eq!(counted(&all[0].2), (3, 2, 2, 0));
    let by_queue = series::buckets(&conn, &tenant, &span, true).await.unwrap();
    assert_eq!(by_queue.len(), 1, "{by_queue:?}");
    assert_eq!(by_queue[0].1.as_deref(), Some("store-series"));
    assert_eq!(counted(&by_queue[0].2), (3, 2, 2, 0));
    // A window that ended before anything was counted holds no bucket.
    let earlier = Span {
        to: now - Duration::minutes(10),
        ..span
    };
    assert!(series::buckets(&conn, &tenant, &earlier, false)
        .await
        .unwrap()
        .is_empty());

    let rows = series::per_queue(&conn, &tenant, &filter, span.from, span.to)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let q = &rows[0];
    assert_eq!(
        (q.id, q.name.as_str(), q.partitions),
        (f.queue_id, "store-series", 1)
    );
    assert_eq!(counted(&q.counts), (3, 2, 2, 0));
    // Over a window with nothing counted the queue is still listed, with zeros.
    let rows = series::per_queue(&conn, &tenant, &filter, earlier.from, earlier.to)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(counted(&rows[0].counts), (0, 0, 0, 0));

    // The tenant's sum since a minute ago takes in (at least) this queue's.
    let since = series::since(&conn, &tenant, now - Duration::minutes(1))
        .await
        .unwrap();
    assert!(since.pushed >= 3 && since.completed >= 2, "{since:?}");
}

#[tokio::test]
async fn a_pooled_connection_starts_with_its_layouts_planning_settings() {
    let b = broker().await;
    let layout = layout().await;
    let store = Store::connect(&b.db_url, 2, layout).unwrap();
    store.ping().await.unwrap();
    let conn = store.client().await.unwrap();
    let mut shown = Vec::new();
    for setting in ["plan_cache_mode", "enable_seqscan", "jit"] {
        let r = conn
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .unwrap();
        shown.push(r.get::<_, String>(0));
    }
    let plans = match layout {
        Layout::Single => "force_generic_plan",
        Layout::Citus => "force_custom_plan",
    };
    assert_eq!(shown, [plans, "off", "off"]);
    if layout == Layout::Citus {
        let r = conn
            .query_one("SHOW citus.max_adaptive_executor_pool_size", &[])
            .await
            .unwrap();
        assert_eq!(r.get::<_, String>(0), "1");
    }
}

#[tokio::test]
async fn the_fleets_samples_are_summed_per_broker_and_bucket() {
    use regent::store::fleet::{self, Window};
    // The broker's own database: its samples are the only ones.
    let f = fixture("store-fleet", 3).await;
    f.b.sample_now().await;
    f.b.sample_now().await;
    let conn = f.store.client().await.unwrap();
    let me = f.b.broker_id();
    let now = Utc::now();
    let w = Window {
        from: now - Duration::hours(1),
        to: now + Duration::minutes(1),
        bucket_minutes: 60,
        hostname: None,
        broker: Some(&me),
    };
    // Summed over the window's buckets (its samples may straddle two).
    let points = fleet::system(&conn, &w).await.unwrap();
    assert!(!points.is_empty());
    assert!(points.iter().all(|p| p.broker_id.to_string() == me));
    let samples: i64 = points.iter().map(|p| p.samples).sum();
    assert!(samples >= 2, "{samples}");
    let pushed = |ops: &[fleet::Ops]| ops.iter().map(|o| o.push).sum::<i64>();
    let requests: Vec<_> = points.iter().map(|p| p.requests).collect();
    let messages: Vec<_> = points.iter().map(|p| p.messages).collect();
    assert_eq!((pushed(&requests), pushed(&messages)), (1, 3));
    for p in &points {
        // The pool's size is the broker's (8 in the tests), in every sample.
        assert_eq!(
            (p.pool_size.min, p.pool_size.max, p.pool_size.last),
            (8, 8, 8)
        );
        assert!(p.pool_open.min <= p.pool_open.max && p.rss_bytes.last > 0);
        assert!(p.covered_ms > 0 && p.cpu_user.micros >= 0);
    }
    let fleet_points = fleet::fleet(&conn, &w).await.unwrap();
    assert!(fleet_points.iter().all(|p| p.brokers == 1));
    assert_eq!(fleet_points.iter().map(|p| p.samples).sum::<i64>(), samples);
    let requests: Vec<_> = fleet_points.iter().map(|p| p.requests).collect();
    assert_eq!(pushed(&requests), 1);
    assert!(
        fleet_points.windows(2).all(|w| w[0].bucket > w[1].bucket),
        "newest first"
    );
    // A broker id the window does not hold matches nothing.
    let other = Uuid::now_v7().to_string();
    let nobody = Window {
        broker: Some(&other),
        ..w
    };
    assert!(fleet::system(&conn, &nobody).await.unwrap().is_empty());

    let recent = fleet::recent(&conn, now - Duration::hours(1), 10)
        .await
        .unwrap();
    assert_eq!(recent.len(), 1);
    let r = &recent[0];
    assert_eq!((r.broker_id.to_string(), r.samples), (me.clone(), samples));
    assert_eq!((r.requests.push, r.messages.push), (1, 3));
    assert_eq!(r.pool_open, points.last().unwrap().pool_open.last as i32);
}

/// Each migration's recorded checksum, by version.
async fn recorded_checksums(db: &tokio_postgres::Client) -> Vec<(i32, String)> {
    db.query(
        "SELECT version, checksum FROM refinery_schema_history ORDER BY version",
        &[],
    )
    .await
    .expect("refinery's record")
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// A database migrated before V1, V3, V15, V19 and V20 were rewritten to hold only their
/// schema recorded their first checksums: a start moves exactly those to the rewritten files'
/// and the database is taken as migrated, its functions defined; any other recorded
/// difference is still refused as divergent.
#[tokio::test]
async fn a_database_migrated_before_the_rewrite_starts_and_a_divergent_one_is_refused() {
    let url = crate::support::fresh_database().await;
    let (db, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let now = recorded_checksums(&db).await;
    let versions: Vec<i32> = now.iter().map(|(v, _)| *v).collect();
    let files: Vec<i32> = regent::store::history::APPLIED
        .iter()
        .map(|(v, _)| *v)
        .collect();
    assert_eq!(versions, files, "every migration is recorded");
    for (version, first) in regent::store::history::REWRITTEN {
        db.execute(
            "UPDATE refinery_schema_history SET checksum = $2 WHERE version = $1",
            &[version, &first.to_string()],
        )
        .await
        .expect("record the first checksum");
    }
    db.execute("DROP FUNCTION regent_append_known", &[])
        .await
        .expect("drop a function");

    Store::migrate(&url)
        .await
        .expect("a database migrated before the rewrite starts");
    assert_eq!(recorded_checksums(&db).await, now);
    let defined: i64 = db
        .query_one(
            "SELECT count(*) FROM pg_proc WHERE proname = 'regent_append_known'",
            &[],
        )
        .await
        .expect("pg_proc")
        .get(0);
    assert_eq!(defined, 1, "the functions are defined at every start");

    db.execute(
        "UPDATE refinery_schema_history SET checksum = '1' WHERE version = 3",
        &[],
    )
    .await
    .expect("record another checksum");
    let refused = Store::migrate(&url)
        .await
        .expect_err("a divergent migration is refused");
    assert!(
        format!("{refused:#}").contains("is different than filesystem one"),
        "{refused:#}"
    );
}

/// The previous release's consumer state (V20: each cursor's committed offset, lease and
/// retry count on its `cursors` row) survives V21, which moves it into the cursor log: every
/// cursor reads as it was, a live lease still acks, and consumption goes on from where it
/// was. The database is put back into V20's layout by hand, from state the API made.
#[tokio::test]
async fn a_database_of_the_previous_release_keeps_its_cursors_leases_and_messages() {
    if crate::support::single_only("the V20 layout is put back by hand").await {
        return;
    }
    let b = broker().await;
    b.push("q", "p", &["m0", "m1", "m2", "m3", "m4"]).await;
    let first = b.pop("q", "batch=2").await;
    assert_eq!(Broker::txids(&first), vec!["m0", "m1"]);
    b.ack_all(None, &first).await;
    let leased = b.pop("q", "batch=1&consumerGroup=g").await;
    assert_eq!(Broker::txids(&leased), vec!["m0"]);
    let failed = b.pop("q", "batch=1&consumerGroup=r").await;
    let item = |status: &str| {
        serde_json::json!([{
            "transactionId": "m0",
            "partitionId": failed["messages"][0]["partitionId"],
            "leaseId": failed["messages"][0]["leaseId"],
            "status": status,
        }])
    };
    b.ack_batch(Some("r"), item("failed")).await;
    let url = b.db_url.clone();
    let db = b.db().await;
    let state =
        "SELECT string_agg(concat_ws(',', partition_id, consumer_group, committed, lease_id,
                                             lease_expires_at, lease_end, retry_count), ';'
                                   ORDER BY partition_id, consumer_group) FROM cursor_state";
    let before: String = db.query_one(state, &[]).await.unwrap().get(0);
    assert!(before.contains(",r,") && before.contains(",g,"), "{before}");
    drop(b);

    db.batch_execute(
        "ALTER TABLE cursors ADD COLUMN lease_id uuid, ADD COLUMN lease_expires_at timestamptz,
                             ADD COLUMN lease_end bigint,
                             ADD COLUMN retry_count integer NOT NULL DEFAULT 0;
         UPDATE cursors c SET start = s.committed, lease_id = s.lease_id,
                lease_expires_at = s.lease_expires_at, lease_end = s.lease_end,
                retry_count = s.retry_count
           FROM cursor_state s
          WHERE s.partition_id = c.partition_id AND s.consumer_group = c.consumer_group;
         DROP VIEW cursor_state;
         DROP TABLE cursor_log;
         DROP INDEX cursors_walk;
         ALTER TABLE cursors RENAME COLUMN start TO committed;
         ALTER TABLE cursors SET (fillfactor = 70);
         CREATE INDEX cursors_lease ON cursors (lease_id) WHERE lease_id IS NOT NULL;
         CREATE INDEX cursors_claim_order
             ON cursors (queue_id, consumer_group, lease_expires_at NULLS FIRST, partition_id);
         DELETE FROM refinery_schema_history WHERE version = 21;",
    )
    .await
    .expect("the V20 layout");

    Store::migrate(&url).await.expect("V21 migrates it");
    let after: String = db.query_one(state, &[]).await.unwrap().get(0);
    assert_eq!(after, before, "every cursor as it was");

    let b = Broker::attach(&url).await;
    let acked = b
        .ack_batch(
            Some("g"),
            serde_json::json!([{
                "transactionId": "m0",
                "partitionId": leased["messages"][0]["partitionId"],
                "leaseId": leased["messages"][0]["leaseId"],
                "status": "completed",
            }]),
        )
        .await;
    assert_eq!(
        acked[0]["success"], true,
        "the lease taken before still acks: {acked:?}"
    );
    assert_eq!(
        Broker::txids(&b.pop("q", "batch=10").await),
        vec!["m2", "m3", "m4"],
        "queue mode goes on after what it committed"
    );
    assert_eq!(
        Broker::txids(&b.pop("q", "batch=10&consumerGroup=g").await),
        vec!["m1", "m2", "m3", "m4"]
    );
    let r = b
        .cursor(leased["messages"][0]["partitionId"].as_str().unwrap(), "r")
        .await;
    assert_eq!(
        r.map(|(c, _, n)| (c, n)),
        Some((-1, 1)),
        "the retry charged is kept"
    );
}
