//! `regent_append`, the push's database function, called through `regent_store::append` on
//! the layout under test. It has two bodies (`crates/store/sql/functions.sql` on one
//! PostgreSQL, `crates/store/citus/functions.sql` on Citus); the Citus pass runs these tests
//! too, so the two are held to the same answers on every rule of a push: offsets dense and
//! in order, a resent transaction id answered with the stored message's id and not appended
//! again, a batch's new messages appended around its duplicates, an id whose window has
//! passed taken anew, and an optimistic append of a duplicate refused whole.

use regent::rules::tx_hash::tx_hash;
use regent::store::append::{append_many, Appended, Batch, Dedup, Window};
use regent::store::frames;
use regent::store::message::Message;
use regent::store::{Layout, Store};
use uuid::Uuid;

use crate::support::{broker, layout, Broker};

const WINDOW: Window = Window(3600);

struct Partition {
    b: Broker,
    store: Store,
    id: Uuid,
}

/// A partition made by a push through the HTTP API (one message, `seed`).
async fn partition(queue: &str) -> Partition {
    let b = broker().await;
    b.push(queue, "p", &["seed"]).await;
    let id = b
        .db()
        .await
        .query_one(
            "SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
              WHERE q.name = $1 AND p.name = 'p'",
            &[&queue],
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
