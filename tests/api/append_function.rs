//! `regent_append`, the push's database function, called through `regent_store::append` on
//! the layout under test. It has two bodies (`crates/store/sql/functions.sql` on one
//! PostgreSQL, `crates/store/citus/functions.sql` on Citus); the Citus pass runs these tests
//! too, so the two are held to the same answers on every rule of a push: offsets dense and
//! in order, a resent transaction id answered with the stored message's id and not appended
//! again, a batch's new messages appended around its duplicates, an id whose window has
//! passed taken anew, and an optimistic append of a duplicate refused whole. The known
//! push's function (`regent_append_known`, one PostgreSQL only) is held to the same rules
//! for several partitions in one call.

use regent::rules::tx_hash::tx_hash;
use regent::store::append::{append_known, append_many, Appended, Batch, Dedup, Window};
use regent::store::frames;
use regent::store::message::Message;
use regent::store::{Layout, Store};
use std::sync::Arc;

use uuid::Uuid;

use crate::support::{broker, layout, Broker};

const WINDOW: Window = Window(3600);

struct Partition {
    b: Arc<Broker>,
    store: Store,
    id: Uuid,
}

/// A partition made by a push through the HTTP API (one message, `seed`).
async fn partition(queue: &str) -> Partition {
    partition_of(Arc::new(broker().await), queue, "p").await
}

/// Partition `name` of `queue` on broker `b`, made by a push of `seed`.
async fn partition_of(b: Arc<Broker>, queue: &str, name: &str) -> Partition {
    b.push(queue, name, &["seed"]).await;
    let id = b
        .db()
        .await
        .query_one(
            "SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
              WHERE q.name = $1 AND p.name = $2",
            &[&queue, &name],
        )
        .await
        .unwrap()
        .get(0);
    Partition {
        store: Store::connect(&b.db_url, 2, layout().await).unwrap(),
        id,
        b,
    }
}

impl Partition {
    /// A batch of these transaction ids, with fresh message ids (returned in order).
    fn batch(&self, txids: &[&str]) -> (Batch, Vec<Uuid>) {
        let ids: Vec<Uuid> = txids.iter().map(|_| Uuid::now_v7()).collect();
        let frames = txids
            .iter()
            .zip(&ids)
            .map(|(t, id)| {
                frames::encode(&Message {
                    message_id: *id,
                    transaction_id: t.to_string(),
                    trace_id: None,
                    producer_sub: None,
                    encrypted: false,
                    payload: serde_json::value::to_raw_value(&serde_json::json!({"t": t})).unwrap(),
                })
                .unwrap()
            })
            .collect();
        let hashes = txids.iter().map(|t| tx_hash(self.id, t)).collect();
        let batch = Batch {
            partition: self.id,
            hashes,
            frames,
        };
        (batch, ids)
    }

    async fn append(
        &self,
        txids: &[&str],
        dedup: Dedup,
        window: Window,
    ) -> Result<(Vec<Appended>, Vec<Uuid>), regent::store::StoreError> {
        let (batch, ids) = self.batch(txids);
        let mut conn = self.store.client().await?;
        let tx = conn.begin().await?;
        let mut out = append_many(&tx, &[batch], dedup, window).await?;
        tx.commit().await?;
        Ok((out.remove(0), ids))
    }

    /// The transaction ids the log holds, in offset order, and the next offset.
    async fn log(&self) -> (Vec<String>, i64) {
        let db = self.b.db().await;
        let rows = db
            .query(
                "SELECT frames FROM segments WHERE partition_id = $1 ORDER BY end_offset",
                &[&self.id],
            )
            .await
            .unwrap();
        let mut txids = Vec::new();
        for r in rows {
            let segment: Vec<u8> = r.get(0);
            for frame in frames::split(&segment) {
                txids.push(frames::decode(frame.unwrap()).unwrap().transaction_id);
            }
        }
        let next: i64 = db
            .query_one(
                "SELECT next_offset FROM partition_heads WHERE id = $1",
                &[&self.id],
            )
            .await
            .unwrap()
            .get(0);
        (txids, next)
    }
}

#[tokio::test]
async fn a_batch_is_appended_whole_and_a_resent_id_answers_the_stored_message() {
    let p = partition("append-fn-dups").await;
    let (_, before) = p.log().await;
    let (first, ids) = p
        .append(&["a", "b", "c"], Dedup::Careful, WINDOW)
        .await
        .unwrap();
    assert_eq!(first, vec![Appended::New; 3]);
    let (again, _) = p
        .append(&["b", "d", "a"], Dedup::Careful, WINDOW)
        .await
        .unwrap();
    assert_eq!(
        again,
        vec![
            Appended::Duplicate(Some(ids[1])),
            Appended::New,
            Appended::Duplicate(Some(ids[0]))
        ]
    );
    let (txids, next) = p.log().await;
    assert_eq!(
        txids,
        ["seed", "a", "b", "c", "d"],
        "only d was appended, after c"
    );
    assert_eq!(next, before + 4, "offsets stay dense");
}

#[tokio::test]
async fn an_optimistic_append_of_a_duplicate_is_refused_whole() {
    let p = partition("append-fn-optimistic").await;
    p.append(&["a"], Dedup::Optimistic, WINDOW).await.unwrap();
    let err = p
        .append(&["b", "a"], Dedup::Optimistic, WINDOW)
        .await
        .expect_err("a duplicate fails the optimistic append");
    assert!(err.is_duplicate(), "{err:?}");
    assert_eq!(
        p.log().await.0,
        ["seed", "a"],
        "nothing of the refused batch was kept"
    );
}

#[tokio::test]
async fn an_id_whose_window_has_passed_is_taken_anew() {
    let p = partition("append-fn-window").await;
    p.append(&["a"], Dedup::Careful, WINDOW).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (again, _) = p.append(&["a"], Dedup::Careful, Window(1)).await.unwrap();
    assert_eq!(again, vec![Appended::New]);
    let (still, _) = p.append(&["a"], Dedup::Careful, WINDOW).await.unwrap();
    assert!(
        matches!(still[0], Appended::Duplicate(Some(_))),
        "the new entry dedups again"
    );
    assert_eq!(p.log().await.0, ["seed", "a", "a"]);
}

#[tokio::test]
async fn a_missing_partition_is_refused_as_stale() {
    let p = partition("append-fn-gone").await;
    let gone = Partition {
        id: match layout().await {
            Layout::Single => Uuid::now_v7(),
            Layout::Citus => Uuid::new_v5(&Uuid::now_v7(), b"gone"),
        },
        ..p
    };
    let err = gone
        .append(&["a"], Dedup::Careful, WINDOW)
        .await
        .expect_err("no such partition");
    assert!(err.is_stale(), "{err:?}");
}

/// Two partitions of one queue, in id order (the order a known push names them in), and
/// the queue's options as stored.
async fn two_known(queue: &str) -> Option<(Partition, Partition, serde_json::Value)> {
    if crate::support::single_only("regent_append_known is one PostgreSQL's").await {
        return None;
    }
    let b = Arc::new(broker().await);
    let first = partition_of(b.clone(), queue, "p").await;
    let second = partition_of(b, queue, "q").await;
    let options: serde_json::Value = first
        .b
        .db()
        .await
        .query_one(
            "SELECT q.options FROM queues q JOIN partitions p ON p.queue_id = q.id WHERE p.id = $1",
            &[&first.id],
        )
        .await
        .unwrap()
        .get(0);
    Some(match first.id < second.id {
        true => (first, second, options),
        false => (second, first, options),
    })
}

/// One call of the known push for these batches (each partition's txids); the message ids
/// of every batch.
async fn known(
    parts: &[(&Partition, &[&str])],
    options: &serde_json::Value,
    dedup: Dedup,
) -> (
    Result<Vec<Vec<Appended>>, regent::store::StoreError>,
    Vec<Vec<Uuid>>,
) {
    let (batches, ids): (Vec<Batch>, Vec<Vec<Uuid>>) =
        parts.iter().map(|(p, t)| p.batch(t)).unzip();
    let options = vec![options; batches.len()];
    let conn = parts[0].0.store.client().await.unwrap();
    let out = append_known(&conn, &batches, &options, dedup, WINDOW).await;
    (out, ids)
}

#[tokio::test]
async fn a_known_push_appends_to_each_partition_from_its_own_head() {
    let Some((p, q, options)) = two_known("append-known-heads").await else {
        return;
    };
    let (_, p_next) = p.log().await;
    let (_, q_next) = q.log().await;
    for (round, dedup) in [Dedup::Optimistic, Dedup::Careful].into_iter().enumerate() {
        let (a, b, c) = (
            format!("a{round}"),
            format!("b{round}"),
            format!("c{round}"),
        );
        let out = known(&[(&p, &[&a, &b]), (&q, &[&c])], &options, dedup)
            .await
            .0
            .unwrap();
        assert_eq!(out, vec![vec![Appended::New; 2], vec![Appended::New]]);
    }
    assert_eq!(
        p.log().await,
        (
            vec![
                "seed".into(),
                "a0".into(),
                "b0".into(),
                "a1".into(),
                "b1".into()
            ],
            p_next + 4
        )
    );
    assert_eq!(
        q.log().await,
        (vec!["seed".into(), "c0".into(), "c1".into()], q_next + 2)
    );
}

#[tokio::test]
async fn a_known_optimistic_push_with_a_duplicate_in_any_batch_writes_nothing() {
    let Some((p, q, options)) = two_known("append-known-dups").await else {
        return;
    };
    let (first, old) = known(&[(&q, &["old"])], &options, Dedup::Optimistic).await;
    first.unwrap();
    let (refused, _) = known(
        &[(&p, &["new"]), (&q, &["x", "old"])],
        &options,
        Dedup::Optimistic,
    )
    .await;
    let err = refused.expect_err("a duplicate fails the optimistic push");
    assert!(err.is_duplicate(), "{err:?}");
    assert_eq!(
        p.log().await.0,
        ["seed"],
        "the other partition's batch was not kept"
    );
    assert_eq!(q.log().await.0, ["seed", "old"]);

    let (out, _) = known(
        &[(&p, &["new"]), (&q, &["x", "old"])],
        &options,
        Dedup::Careful,
    )
    .await;
    assert_eq!(
        out.unwrap(),
        vec![
            vec![Appended::New],
            vec![Appended::New, Appended::Duplicate(Some(old[0][0]))]
        ],
        "the resent id answers the message the optimistic push stored under it"
    );
    assert_eq!(q.log().await.0, ["seed", "old", "x"]);
}

#[tokio::test]
async fn a_known_push_whose_options_changed_is_refused_as_stale_and_writes_nothing() {
    let Some((p, q, options)) = two_known("append-known-stale").await else {
        return;
    };
    let mut changed = options.clone();
    changed["leaseTime"] = serde_json::json!(12345);
    for dedup in [Dedup::Optimistic, Dedup::Careful] {
        let batches = [p.batch(&["a"]).0, q.batch(&["b"]).0];
        let conn = p.store.client().await.unwrap();
        let err = append_known(&conn, &batches, &[&options, &changed], dedup, WINDOW)
            .await
            .expect_err("the second batch's options are not the queue's");
        assert!(err.is_stale(), "{err:?}");
    }
    assert_eq!(p.log().await.0, ["seed"]);
    assert_eq!(q.log().await.0, ["seed"]);
}
