//! Requeueing dead letters: each selected dead letter's snapshot goes back into its own
//! partition as a new message, and the dead letter is deleted, all in one transaction for
//! the whole call.
//!
//! The copy keeps the snapshot's payload (as stored: still sealed if it was), trace id and
//! producer; it gets a new message id and the transaction id
//! `regent_rules::requeue::copy_transaction_id` derives from the original message, so the
//! transaction index deduplicates copies as it deduplicates pushes: two groups' dead letters
//! of one message make one copy, and the log being shared, every group of the queue reads
//! it. Each copy gets a `requeued` trace naming its dead letter.
//!
//! Lock order: the drain lock (shared, to refuse under push maintenance), the partitions in
//! id order, then the dead letters in id order; the append re-locks partitions it holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use uuid::Uuid;

use regent_memory::Announcement;
use regent_rules::push_plan::repeats;
use regent_rules::requeue::copy_transaction_id;
use regent_rules::tx_hash::tx_hash;
use regent_store::append::{append_many, logged, Appended, Batch, Dedup, Window};
use regent_store::dead_letters::{self as store, Taken};
use regent_store::traces::{record_requeued, Requeued};
use regent_store::{commit_if, frames, in_transaction, maintenance, partitions};
use regent_store::{Message, StoreError, Tx};

use crate::dead_letters::{select, Bulk, BulkOutcome, BulkVerdict, DeadLetters, Selection};
use crate::{Error, Family};

/// The trace event every copy gets.
pub const REQUEUED_EVENT: &str = "requeued";

const UNDER_MAINTENANCE: &str = "Push maintenance is on: dead letters cannot be requeued \
     until it is switched off and the buffered pushes are appended";

/// The copies of one call's dead letters: one batch per partition, partitions in id order
/// (the lock order), each batch in the order of the original offsets.
struct Copies {
    /// Per dead letter (by its position in the call's `Taken`): the copy's transaction id
    /// and index hash.
    keys: Vec<(String, Uuid)>,
    batches: Vec<Batch>,
    /// Per batch, per message: its dead letter's position and the copy's message id.
    slots: Vec<Vec<(usize, Uuid)>>,
    /// Dead letters whose message another dead letter of this call copies: (it, that one).
    repeats: Vec<(usize, usize)>,
}

impl Copies {
    /// Plans the copies of `taken`; `framed` false plans only their hashes (a dry run).
    fn plan(taken: &[Taken], framed: bool) -> Result<Copies, StoreError> {
        let keys: Vec<(String, Uuid)> = taken
            .iter()
            .map(|d| {
                let txid = copy_transaction_id(d.message.message_id);
                let hash = tx_hash(d.partition_id, &txid);
                (txid, hash)
            })
            .collect();
        let mut order: Vec<usize> = (0..taken.len()).collect();
        order.sort_by_key(|&i| (taken[i].partition_id, taken[i].offset, taken[i].id));
        let hashes: Vec<Uuid> = order.iter().map(|&i| keys[i].1).collect();
        let mut c = Copies {
            keys: Vec::new(),
            batches: Vec::new(),
            slots: Vec::new(),
            repeats: Vec::new(),
        };
        let mut groups: BTreeMap<Uuid, (Vec<(usize, Uuid)>, Batch)> = BTreeMap::new();
        for (&i, rep) in order.iter().zip(repeats(&hashes)) {
            if let Some(first) = rep {
                c.repeats.push((i, order[first]));
                continue;
            }
            let d = &taken[i];
            let (slots, batch) = groups.entry(d.partition_id).or_insert_with(|| {
                let batch = Batch {
                    partition: d.partition_id,
                    hashes: Vec::new(),
                    frames: Vec::new(),
                };
                (Vec::new(), batch)
            });
            let id = Uuid::now_v7();
            if framed {
                batch
                    .frames
                    .push(frames::encode(&copy(&d.message, id, &keys[i].0))?);
            }
            batch.hashes.push(keys[i].1);
            slots.push((i, id));
        }
        (c.slots, c.batches) = groups.into_values().unzip();
        c.keys = keys;
        Ok(c)
    }

    /// One verdict per dead letter from what became of each batch's copies; `dry` when
    /// nothing was appended (a new copy has no id yet).
    fn verdicts(&self, outcomes: Vec<Vec<Appended>>, dry: bool) -> Vec<BulkVerdict> {
        let mut out = vec![BulkVerdict::Gone; self.keys.len()];
        for (slots, outcome) in self.slots.iter().zip(outcomes) {
            for (&(i, id), v) in slots.iter().zip(outcome) {
                out[i] = match v {
                    Appended::New if dry => BulkVerdict::Requeued(None),
                    Appended::New => BulkVerdict::Requeued(Some(id)),
                    Appended::Duplicate(stored) => BulkVerdict::Duplicate(stored),
                };
            }
        }
        for &(i, first) in &self.repeats {
            out[i] = match out[first] {
                BulkVerdict::Requeued(id) | BulkVerdict::Duplicate(id) => {
                    BulkVerdict::Duplicate(id)
                }
                other => other,
            };
        }
        out
    }

    /// The traces of the copies appended.
    fn traces<'a>(&'a self, taken: &'a [Taken], verdicts: &[BulkVerdict]) -> Vec<Requeued<'a>> {
        verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| matches!(v, BulkVerdict::Requeued(Some(_))))
            .map(|(i, _)| Requeued {
                transaction_id: &self.keys[i].0,
                hash: self.keys[i].1,
                dead_letter: &taken[i],
            })
            .collect()
    }
}

/// The copy of a snapshot: the same message under a new id and the derived transaction id.
fn copy(original: &Message, id: Uuid, transaction_id: &str) -> Message {
    Message {
        message_id: id,
        transaction_id: transaction_id.to_string(),
        ..original.clone()
    }
}

/// What a committed requeue tells the pops: the partitions that got a copy.
fn written(tenant: &str, taken: &[Taken], verdicts: &[BulkVerdict]) -> Announcement {
    let mut partitions: Vec<(Uuid, Uuid)> = Vec::new();
    let mut queues: Vec<(String, usize)> = Vec::new();
    for (d, _) in taken
        .iter()
        .zip(verdicts)
        .filter(|(_, v)| matches!(v, BulkVerdict::Requeued(_)))
    {
        if partitions.contains(&(d.queue_id, d.partition_id)) {
            continue;
        }
        partitions.push((d.queue_id, d.partition_id));
        match queues.iter_mut().find(|(q, _)| *q == d.queue) {
            Some((_, n)) => *n += 1,
            None => queues.push((d.queue.clone(), 1)),
        }
    }
    Announcement {
        tenant: tenant.to_string(),
        queues,
        created: Vec::new(),
        partitions,
        reopened: Vec::new(),
        reopened_at: Vec::new(),
        ephemeral: Vec::new(),
    }
}

/// Per dead letter acted on: its verdict and its copy's transaction id.
fn done(
    taken: &[Taken],
    copies: &Copies,
    verdicts: Vec<BulkVerdict>,
) -> HashMap<i64, (BulkVerdict, Option<String>)> {
    taken
        .iter()
        .zip(verdicts)
        .zip(&copies.keys)
        .map(|((d, v), (txid, _))| (d.id, (v, Some(txid.clone()))))
        .collect()
}

/// What the requeue transaction did: the dead letters taken, their copies, the verdicts.
struct Requeue {
    taken: Vec<Taken>,
    copies: Copies,
    verdicts: Vec<BulkVerdict>,
}

/// The requeue of the selected dead letters, in the caller's transaction: partitions locked,
/// dead letters taken, copies appended and traced. `Ok(None)` under push maintenance.
async fn requeue(
    tx: &Tx<'_>,
    tenant: &str,
    selection: &Selection,
    window: Window,
) -> Result<Option<Requeue>, StoreError> {
    if maintenance::still_buffering(tx, tenant).await? {
        return Ok(None);
    }
    let mut parts: Vec<Uuid> = selection
        .items
        .iter()
        .filter_map(|(_, p)| p.as_ref().map(|p| p.partition_id))
        .collect();
    parts.sort();
    parts.dedup();
    partitions::lock(tx, tenant, &parts).await?;
    let taken = store::take(tx, tenant, &selection.found()).await?;
    let copies = Copies::plan(&taken, true)?;
    let appended = append_many(tx, &copies.batches, Dedup::Careful, window).await?;
    let verdicts = copies.verdicts(appended, false);
    let traces = copies.traces(&taken, &verdicts);
    if !traces.is_empty() {
        record_requeued(tx, tenant, REQUEUED_EVENT, &traces).await?;
    }
    Ok(Some(Requeue {
        taken,
        copies,
        verdicts,
    }))
}

/// What a requeue would do, in the caller's transaction, changing nothing.
async fn rehearse(
    tx: &Tx<'_>,
    tenant: &str,
    selection: &Selection,
) -> Result<Option<Requeue>, StoreError> {
    if maintenance::still_buffering(tx, tenant).await? {
        return Ok(None);
    }
    let taken = store::read(tx, tenant, &selection.found()).await?;
    let copies = Copies::plan(&taken, false)?;
    let mut outcomes = Vec::with_capacity(copies.batches.len());
    for b in &copies.batches {
        let mut outcome = vec![Appended::New; b.hashes.len()];
        for (at, id) in logged(tx, b).await? {
            outcome[at] = Appended::Duplicate(id);
        }
        outcomes.push(outcome);
    }
    let verdicts = copies.verdicts(outcomes, true);
    Ok(Some(Requeue {
        taken,
        copies,
        verdicts,
    }))
}

impl Family<'_, DeadLetters> {
    /// Requeues the selected dead letters in one transaction, or, in a dry run, says what
    /// that would do. Refused whole under push maintenance (a conflict) and past the
    /// tenant's stored-message cap (room for every selected dead letter is held first).
    pub async fn requeue(&self, tenant: &Arc<str>, bulk: &Bulk<'_>) -> Result<BulkOutcome, Error> {
        if bulk.dry_run {
            let (selection, r) = in_transaction!(self.store, |tx| {
                let selection = select(tx, tenant, bulk).await?;
                let r = rehearse(tx, tenant, &selection).await?;
                Ok((selection, r))
            })?;
            let r = r.ok_or_else(|| Error::Conflict(UNDER_MAINTENANCE.into()))?;
            return Ok(selection.answer(done(&r.taken, &r.copies, r.verdicts)));
        }
        let selection = in_transaction!(self.store, |tx| { select(tx, tenant, bulk).await })?;
        let room = self.reserve(tenant, selection.found().len() as i64).await?;
        let r = commit_if!(self.store, |tx| {
            Ok(requeue(tx, tenant, &selection, self.window())
                .await?
                .ok_or(()))
        })?;
        let Ok(r) = r else {
            room.released();
            return Err(Error::Conflict(UNDER_MAINTENANCE.into()));
        };
        let new = r
            .verdicts
            .iter()
            .filter(|v| matches!(v, BulkVerdict::Requeued(_)))
            .count();
        room.committed(new as i64);
        self.announce(&written(tenant, &r.taken, &r.verdicts));
        Ok(selection.answer(done(&r.taken, &r.copies, r.verdicts)))
    }
}
