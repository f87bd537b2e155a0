//! Single messages (spec §10): listed newest first across partitions, read one at a time,
//! deleted, retried and moved to the dead-letter queue. The log is never rewritten: a
//! deletion is a tombstone every pop skips, a retry appends a copy, a move to the dead-letter
//! queue files a dead letter and deletes the message (docs/design/storage.md, "Single messages").

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use regent_rules::message_status::{seen, GroupCursor, Seen, Status};
use regent_rules::naming::QUEUE_MODE;
use regent_rules::tx_hash::tx_hash;
use regent_store::dead_letters::{self, Letter};
use regent_store::messages::{self as store, CursorRow, Head};
pub use regent_store::messages::{DeadMark, Place, Scope};
use regent_store::traces::Origin;
use regent_store::{in_transaction, Message, StoredMessage};

use crate::push::{PushItem, Verdict};
use crate::{Error, Service};

/// Partitions the listing reads per round, most recently pushed first.
const ROUND: i64 = 64;
/// Partitions one listing reads at most: past this it answers what it found.
const MAX_PARTITIONS: usize = 2048;
/// Segments searched for a transaction id the index has forgotten (its window passed).
const SEARCHED_SEGMENTS: i64 = 200;
/// The reason a dead letter filed by an operator carries.
pub const MOVED_TO_DLQ: &str = "Moved to the dead-letter queue by an operator";

/// What the listing asks for.
#[derive(Clone, Copy, Debug)]
pub struct ListQuery<'a> {
    pub scope: Scope<'a>,
    pub status: Option<Status>,
    pub limit: i64,
    pub offset: i64,
}

/// A message of the listing or the detail: where it is, what it is, what became of it.
#[derive(Clone, Debug)]
pub struct Found {
    pub place: Arc<Place>,
    pub message: StoredMessage,
    pub seen: Seen,
    /// The newest dead letter filed for it, if any.
    pub dead: Option<DeadMark>,
    /// Each group reading its partition: whether it passed the message, and the expiry of a
    /// live lease over it.
    pub groups: Vec<(String, bool, Option<DateTime<Utc>>)>,
}

/// What a message operation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    NotFound,
    /// Deleted by this request (one that found it deleted meanwhile is `NotFound`).
    Deleted,
    /// A copy appended, with its ids.
    Retried {
        message_id: Uuid,
        transaction_id: String,
    },
    /// Dead-lettered for the group and deleted from the log.
    DeadLettered {
        group: String,
    },
}

fn views(rows: &[CursorRow]) -> Vec<GroupCursor<'_>> {
    rows.iter()
        .map(|c| GroupCursor {
            group: &c.group,
            committed: c.committed,
            lease: c.lease,
        })
        .collect()
}

impl Service {
    /// The tenant's message with this transaction id in this partition, while the log holds
    /// it and it is not deleted.
    pub async fn message(
        &self,
        tenant: &str,
        partition: Uuid,
        transaction_id: &str,
    ) -> Result<Option<Found>, Error> {
        let client = self.store.client().await?;
        let Some(place) = store::place(&client, tenant, partition).await? else {
            return Ok(None);
        };
        let hash = tx_hash(partition, transaction_id);
        let mut stored = match store::indexed_offset(&client, partition, hash).await? {
            Some(offset) => store::at(&client, partition, offset).await?,
            None => store::search(&client, partition, transaction_id, SEARCHED_SEGMENTS).await?,
        };
        stored = stored.filter(|m| m.message.transaction_id == transaction_id);
        let Some(mut m) = stored else {
            return Ok(None);
        };
        if !store::tombstoned(&client, &[(partition, m.offset)])
            .await?
            .is_empty()
        {
            return Ok(None);
        }
        let cursors = store::cursors(&client, &[partition]).await?;
        let dead = store::dead_marks(&client, tenant, &[(partition, m.offset)]).await?;
        self.open(&place.queue, &mut m.message);
        let offset = m.offset;
        let groups = cursors
            .iter()
            .map(|c| {
                let lease = c
                    .lease
                    .filter(|&(end, _)| offset > c.committed && offset <= end);
                (c.group.clone(), offset <= c.committed, lease.map(|l| l.1))
            })
            .collect();
        Ok(Some(Found {
            seen: seen(offset, &views(&cursors), !dead.is_empty()),
            place: Arc::new(place),
            message: m,
            dead: dead.into_iter().next(),
            groups,
        }))
    }

    /// A page of the tenant's messages in scope, newest first (payloads not opened: the
    /// listing does not show them).
    pub async fn list_messages(
        &self,
        tenant: &str,
        q: &ListQuery<'_>,
    ) -> Result<Vec<Found>, Error> {
        let client = self.store.client().await?;
        // At least one, so that a full page always has an oldest message.
        let want = (q.offset + q.limit).max(1) as usize;
        let (places, picked) = if q.status == Some(Status::DeadLetter) {
            pick_dead(&client, tenant, q, want).await?
        } else {
            pick_recent(&client, tenant, q, want).await?
        };
        let page: Vec<Pick> = picked.into_iter().skip(q.offset.max(0) as usize).collect();
        let at: Vec<(Uuid, i64)> = page.iter().map(|p| (p.partition, p.offset)).collect();
        let read: HashMap<(Uuid, i64), StoredMessage> = store::read(&client, &at)
            .await?
            .into_iter()
            .map(|(p, m)| ((p, m.offset), m))
            .collect();
        Ok(page
            .into_iter()
            .filter_map(|p| {
                Some(Found {
                    place: places.get(&p.partition)?.clone(),
                    message: read.get(&(p.partition, p.offset))?.clone(),
                    seen: p.seen,
                    dead: p.dead,
                    groups: Vec::new(),
                })
            })
            .collect())
    }

    /// Deletes the message (a tombstone; its transaction id may be pushed again).
    pub async fn delete_message(
        &self,
        tenant: &str,
        partition: Uuid,
        transaction_id: &str,
    ) -> Result<Done, Error> {
        let Some(found) = self.message(tenant, partition, transaction_id).await? else {
            return Ok(Done::NotFound);
        };
        let hash = tx_hash(partition, transaction_id);
        let offset = found.message.offset;
        // Of deletes (and moves to the DLQ) sent together, the one whose tombstone is fresh
        // deleted it; the others found it gone, as one sent after it would.
        let fresh = in_transaction!(self.store, |tx| {
            store::tombstone(tx, partition, offset, hash).await
        })?;
        Ok(if fresh { Done::Deleted } else { Done::NotFound })
    }

    /// Files a dead letter of the message for `group` and deletes it from the log, in one
    /// transaction.
    pub async fn message_to_dlq(
        &self,
        tenant: &str,
        partition: Uuid,
        transaction_id: &str,
        group: Option<&str>,
    ) -> Result<Done, Error> {
        let Some(found) = self.message(tenant, partition, transaction_id).await? else {
            return Ok(Done::NotFound);
        };
        let group = group.unwrap_or(QUEUE_MODE);
        let hash = tx_hash(partition, transaction_id);
        let offset = found.message.offset;
        let letter = Letter {
            tenant,
            queue_id: found.place.queue_id,
            partition_id: partition,
            group,
            offset,
            reason: MOVED_TO_DLQ,
            retry_count: 0,
        };
        // The tombstone decides: of moves (and deletes) of one message sent together, only
        // the one whose tombstone is fresh files it; the others found it gone.
        let filed = in_transaction!(self.store, |tx| {
            if !store::tombstone(tx, partition, offset, hash).await? {
                return Ok(false);
            }
            dead_letters::file(tx, &letter).await?;
            Ok(true)
        })?;
        Ok(match filed {
            true => Done::DeadLettered {
                group: group.to_string(),
            },
            false => Done::NotFound,
        })
    }

    /// Appends a copy of the message to its partition as a new message (every group of the
    /// queue reads it), marked by a `retried` trace naming the original.
    pub async fn retry_message(
        &self,
        tenant: &Arc<str>,
        partition: Uuid,
        transaction_id: &str,
    ) -> Result<Done, Error> {
        let Some(found) = self.message(tenant, partition, transaction_id).await? else {
            return Ok(Done::NotFound);
        };
        let original = &found.message.message;
        if original.encrypted {
            return Err(Error::Invalid(
                "the message's payload cannot be decrypted with this broker's key".into(),
            ));
        }
        let copy = Message {
            message_id: Uuid::now_v7(),
            transaction_id: format!("{transaction_id}:retry:{}", Uuid::now_v7().simple()),
            ..original.clone()
        };
        let item = PushItem {
            queue: found.place.queue.clone(),
            partition: found.place.partition.clone(),
            message: copy,
        };
        let (items, verdicts) = self.push(tenant, vec![item]).await?;
        let stored = match verdicts.first() {
            Some(Verdict::Queued { message_id, .. } | Verdict::Buffered { message_id, .. }) => {
                *message_id
            }
            Some(Verdict::Failed { error }) => return Err(Error::Invalid(error.clone())),
            _ => return Err(Error::Internal("a retried copy was not stored".into())),
        };
        let copy_txid = items[0].message.transaction_id.clone();
        self.mark_copy(tenant, partition, &copy_txid, &found).await;
        Ok(Done::Retried {
            message_id: stored,
            transaction_id: copy_txid,
        })
    }

    /// Records a `retried` trace on the copy. Best effort: the copy is committed already,
    /// and a buffered copy (push maintenance) is not in the log yet to carry one.
    async fn mark_copy(&self, tenant: &str, partition: Uuid, copy: &str, of: &Found) {
        let origin = Origin {
            event_type: "retried",
            key: "retriedFrom",
            message_id: of.message.message.message_id,
            transaction_id: &of.message.message.transaction_id,
            consumer_group: QUEUE_MODE,
        };
        let hash = tx_hash(partition, copy);
        let recorded = match self.store.client().await {
            Ok(c) => {
                regent_store::traces::record_origin(&c, tenant, partition, copy, hash, &origin)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = recorded {
            tracing::warn!(error = %e, "the retried copy's trace was not recorded");
        }
    }
}

/// A message the listing may show, before its frame is read.
struct Pick {
    at: DateTime<Utc>,
    offset: i64,
    partition: Uuid,
    seen: Seen,
    dead: Option<DeadMark>,
}

type Picked = (HashMap<Uuid, Arc<Place>>, Vec<Pick>);

/// The newest `want` messages in scope, newest first: partitions are read most recently
/// pushed first, in rounds, until no partition left can change the page.
async fn pick_recent(
    client: &regent_store::Conn,
    tenant: &str,
    q: &ListQuery<'_>,
    want: usize,
) -> Result<Picked, Error> {
    let mut places: HashMap<Uuid, Arc<Place>> = HashMap::new();
    let mut picked: Vec<Pick> = Vec::new();
    let mut after = None;
    while places.len() < MAX_PARTITIONS {
        let round = store::recent_places(client, tenant, &q.scope, after, ROUND).await?;
        let Some(last) = round.last() else { break };
        after = last.last_push_at.map(|at| (at, last.partition_id));
        // Partitions come most recently pushed first: once the page is full, one whose
        // last push is older than the page's oldest message cannot change it.
        let oldest = (picked.len() >= want).then(|| picked[want - 1].at);
        if oldest.is_some_and(|o| round[0].last_push_at.is_some_and(|at| at < o)) {
            break;
        }
        let ids: Vec<Uuid> = round.iter().map(|p| p.partition_id).collect();
        let heads = store::heads(client, &ids, q.scope.from, q.scope.to, want as i64).await?;
        picked.extend(classify(client, tenant, q, &ids, newest_offsets(&heads, want)).await?);
        picked.sort_by_key(|p| std::cmp::Reverse((p.at, p.offset, p.partition)));
        picked.truncate(want);
        places.extend(round.into_iter().map(|p| (p.partition_id, Arc::new(p))));
    }
    Ok((places, picked))
}

/// The newest `want` dead-lettered messages in scope, found through the dead letters (a
/// rare status: searching the log's newest messages for it would read thousands of
/// partitions to fill a page).
async fn pick_dead(
    client: &regent_store::Conn,
    tenant: &str,
    q: &ListQuery<'_>,
    want: usize,
) -> Result<Picked, Error> {
    let found = store::dead_letter_places(client, tenant, &q.scope, want as i64).await?;
    let offsets: Vec<(Uuid, i64, DateTime<Utc>)> = found
        .iter()
        .map(|(p, offset, at)| (p.partition_id, *offset, *at))
        .collect();
    let places: HashMap<Uuid, Arc<Place>> = found
        .into_iter()
        .map(|(p, _, _)| (p.partition_id, Arc::new(p)))
        .collect();
    let ids: Vec<Uuid> = places.keys().copied().collect();
    let picked = classify(client, tenant, q, &ids, offsets).await?;
    Ok((places, picked))
}

/// These messages of these partitions with their statuses, deleted ones and other statuses
/// left out.
async fn classify(
    client: &regent_store::Conn,
    tenant: &str,
    q: &ListQuery<'_>,
    ids: &[Uuid],
    offsets: Vec<(Uuid, i64, DateTime<Utc>)>,
) -> Result<Vec<Pick>, Error> {
    let cursors = store::cursors(client, ids).await?;
    let pairs: Vec<(Uuid, i64)> = offsets.iter().map(|&(p, o, _)| (p, o)).collect();
    let deleted: HashSet<(Uuid, i64)> = store::tombstoned(client, &pairs)
        .await?
        .into_iter()
        .collect();
    // Newest first, so the first mark of a message kept is its newest.
    let mut dead: HashMap<(Uuid, i64), DeadMark> = HashMap::new();
    for d in store::dead_marks(client, tenant, &pairs).await? {
        dead.entry((d.partition_id, d.offset)).or_insert(d);
    }
    let mut by_partition: HashMap<Uuid, Vec<CursorRow>> = HashMap::new();
    for c in cursors {
        by_partition.entry(c.partition_id).or_default().push(c);
    }
    let mut out = Vec::new();
    for (partition, offset, at) in offsets {
        if deleted.contains(&(partition, offset)) {
            continue;
        }
        let mine = by_partition
            .get(&partition)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mark = dead.get(&(partition, offset)).cloned();
        let seen = seen(offset, &views(mine), mark.is_some());
        if q.status.is_none_or(|st| st == seen.status) {
            out.push(Pick {
                at,
                offset,
                partition,
                seen,
                dead: mark,
            });
        }
    }
    Ok(out)
}

/// Per partition, the offsets of its newest segments, newest first, at most `want` each:
/// (partition, offset, appended at).
fn newest_offsets(heads: &[Head], want: usize) -> Vec<(Uuid, i64, DateTime<Utc>)> {
    let mut out = Vec::new();
    let mut taken: HashMap<Uuid, usize> = HashMap::new();
    for h in heads {
        let n = taken.entry(h.partition_id).or_default();
        for offset in (h.base_offset..=h.end_offset).rev() {
            if *n >= want {
                break;
            }
            *n += 1;
            out.push((h.partition_id, offset, h.created_at));
        }
    }
    out
}
