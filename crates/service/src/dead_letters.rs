//! Dead letters: read with their payloads opened, and deleted or requeued in bulk.
//!
//! A bulk call selects by ids, by a filter, or both, at most [`MAX_BULK`] at a time, and
//! answers one item per dead letter it considered. Deleting is one transaction; requeueing
//! is in `requeue.rs`.

use std::collections::HashMap;

use uuid::Uuid;

use regent_store::dead_letters as store;
pub use regent_store::dead_letters::{DeadLetter, Filter, Picked, Selector};
use regent_store::{in_transaction, StoreError, Tx};

use crate::Family;
use crate::{Error, Service};

/// The most dead letters one bulk call takes, and how many it takes when not told.
pub const MAX_BULK: i64 = 10_000;

/// A bulk call: which dead letters, how many at most, and whether only to say what would
/// happen.
#[derive(Clone, Copy, Debug)]
pub struct Bulk<'a> {
    pub selector: Selector<'a>,
    /// 1 to [`MAX_BULK`].
    pub limit: i64,
    pub dry_run: bool,
}

/// What became (or, in a dry run, would become) of one dead letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkVerdict {
    /// Appended to its partition as this new message (none yet in a dry run).
    Requeued(Option<Uuid>),
    /// Its message already has a copy in the partition, from an earlier call or from another
    /// group's dead letter of the same message in this one: that copy's id, when there is
    /// one yet. The dead letter is removed all the same.
    Duplicate(Option<Uuid>),
    /// No dead letter of the tenant with this id matches any more: never filed, already
    /// requeued or deleted (by another call, or with its queue), or outside the filter.
    Gone,
    Deleted,
}

/// One dead letter of a bulk call's answer.
#[derive(Clone, Debug)]
pub struct BulkItem {
    pub dead_letter_id: i64,
    /// Where it was, when the call found it.
    pub found: Option<Picked>,
    /// The transaction id of its copy (requeue only, and not when gone).
    pub copy_transaction_id: Option<String>,
    pub verdict: BulkVerdict,
}

/// A bulk call's answer, items in the order of the ids sent, else oldest failure first.
#[derive(Debug)]
pub struct BulkOutcome {
    pub items: Vec<BulkItem>,
    /// More dead letters matched (or more ids were sent) than the call's limit.
    pub more: bool,
}

/// What a bulk call selected, in answer order: each dead letter id with what was found of
/// it.
pub(crate) struct Selection {
    pub(crate) items: Vec<(i64, Option<Picked>)>,
    pub(crate) more: bool,
}

impl Selection {
    /// The ids of the dead letters found.
    pub(crate) fn found(&self) -> Vec<i64> {
        self.items
            .iter()
            .filter(|(_, p)| p.is_some())
            .map(|(id, _)| *id)
            .collect()
    }

    /// One item per dead letter considered; `done` says what became of those acted on
    /// (verdict, copy transaction id), every other one is gone.
    pub(crate) fn answer(
        self,
        mut done: HashMap<i64, (BulkVerdict, Option<String>)>,
    ) -> BulkOutcome {
        let items = self
            .items
            .into_iter()
            .map(|(id, found)| {
                let (verdict, copy) = done.remove(&id).unwrap_or((BulkVerdict::Gone, None));
                BulkItem {
                    dead_letter_id: id,
                    found,
                    copy_transaction_id: copy,
                    verdict,
                }
            })
            .collect();
        BulkOutcome {
            items,
            more: self.more,
        }
    }
}

/// The dead letters a bulk call considers, inside the caller's transaction. With ids, the
/// first `limit` distinct ids sent, each found or not; without, up to `limit` matches.
pub(crate) async fn select(
    tx: &Tx<'_>,
    tenant: &str,
    bulk: &Bulk<'_>,
) -> Result<Selection, StoreError> {
    let limit = bulk.limit.clamp(1, MAX_BULK);
    let Some(sent) = bulk.selector.ids else {
        let mut picked = store::pick(tx, tenant, &bulk.selector, limit + 1).await?;
        let more = picked.len() as i64 > limit;
        picked.truncate(limit as usize);
        let items = picked.into_iter().map(|p| (p.id, Some(p))).collect();
        return Ok(Selection { items, more });
    };
    let mut ids = Vec::with_capacity(sent.len().min(limit as usize));
    let mut seen = std::collections::HashSet::new();
    for id in sent.iter().filter(|id| seen.insert(**id)) {
        ids.push(*id);
    }
    let more = ids.len() as i64 > limit;
    ids.truncate(limit as usize);
    let sel = Selector {
        ids: Some(&ids),
        ..bulk.selector
    };
    let mut found: HashMap<i64, Picked> = store::pick(tx, tenant, &sel, limit)
        .await?
        .into_iter()
        .map(|p| (p.id, p))
        .collect();
    let items = ids.iter().map(|id| (*id, found.remove(id))).collect();
    Ok(Selection { items, more })
}

impl Family<'_, DeadLetters> {
    /// A page of the tenant's dead letters, newest failure first, and how many match.
    pub async fn list(
        &self,
        tenant: &str,
        filter: &Filter<'_>,
    ) -> Result<(Vec<DeadLetter>, i64), Error> {
        let client = self.store.client().await?;
        let (mut letters, total) =
            regent_store::dead_letters::list(&client, tenant, filter).await?;
        for d in &mut letters {
            self.open(&d.queue, &mut d.message.message);
        }
        Ok((letters, total))
    }

    /// Deletes the selected dead letters in one transaction (a dry run only selects them).
    pub async fn delete(&self, tenant: &str, bulk: &Bulk<'_>) -> Result<BulkOutcome, Error> {
        let (selection, deleted) = in_transaction!(self.store, |tx| {
            let selection = select(tx, tenant, bulk).await?;
            let ids = selection.found();
            let deleted: Vec<i64> = if bulk.dry_run {
                ids
            } else {
                let taken = store::take(tx, tenant, &ids).await?;
                taken.into_iter().map(|d| d.id).collect()
            };
            Ok((selection, deleted))
        })?;
        let done = deleted
            .into_iter()
            .map(|id| (id, (BulkVerdict::Deleted, None)))
            .collect();
        Ok(selection.answer(done))
    }
}

/// The use cases of dead letters: `service.dead_letters().…`.
pub enum DeadLetters {}

impl Service {
    pub fn dead_letters(&self) -> Family<'_, DeadLetters> {
        Family::new(self)
    }
}
