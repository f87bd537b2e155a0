//! Ack: acknowledgement as an offset commit, exactly as the seed contract says. Items are
//! grouped by (partition, lease); each group resolves its transaction ids to offsets (from
//! what this broker delivered under the lease, else through the transaction index), locks
//! its cursor, checks the lease on the locked row, and commits what `regent_rules::ack_plan`
//! decides. Concurrent requests' groups share one transaction; a group whose partition id is
//! not a UUID, and every group of a fused transaction that fails, is re-run on its own, so
//! one group's failure never changes another's outcome (the seed's isolation rule).

use std::collections::{HashMap, HashSet};

use tokio::sync::oneshot;
use uuid::Uuid;

use regent_memory::placements::Place;
use regent_memory::tallies::Tally;
use regent_memory::{Announcement, Op, Outcome};
use regent_rules::ack_plan::{
    self, AckItem, AckPlan, CursorView, ItemOutcome, Policy, CONSUMER_NOT_FOUND, FLUSH_FAILED,
    INVALID_LEASE, NOT_OWNED, POOL,
};
use regent_rules::options::QueueOptions;
use regent_rules::status::AckStatus;
use regent_rules::tx_hash::tx_hash;
use regent_store::cursor::{self, Completed, Completion, Locked};
use regent_store::dead_letters::{self, Letter};
use regent_store::{retrying, StoreError, Tx};

use crate::fusion::{self, Fusable};
use crate::{Error, Service};

/// One ack as sent, with the contract's defaults applied for absent fields.
#[derive(Clone, Debug)]
pub struct SentAck {
    pub transaction_id: String,
    /// As the client sent it: a malformed id fails in the database with its own message.
    pub partition_id: String,
    pub lease_id: Option<String>,
    pub status: AckStatus,
    pub error: Option<String>,
}

/// Acks sharing one partition, consumer group and lease (or no lease).
#[derive(Clone, Debug)]
pub(crate) struct AckGroup {
    pub partition_id: String,
    pub group: String,
    pub lease_id: Option<String>,
    pub items: Vec<SentAck>,
    /// The items' offsets, when this broker delivered them under the lease: the transaction
    /// index is then not consulted.
    pub known: Option<Vec<i64>>,
    /// End the live lease even where the seed keeps it (a stream cycle's `release_lease`).
    pub release_at_once: bool,
}

/// How an ack whose `leaseId` is not the live lease is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeaseCheck {
    /// The ack routes: refused with `invalid or expired lease` (the seed).
    Strict,
    /// Transactions: a replay of already-completed acks is a no-op (see `ack_plan::replay`).
    AllowReplay,
}

/// A group's plan as carried out, and what it left for the group's other consumers.
#[derive(Debug)]
pub(crate) struct Acked {
    pub plan: AckPlan,
    /// The queue and partition when the ack ended the group's lease with messages still to
    /// read on the partition (a nack to retry, a batch acked in part, or pushed while it was
    /// leased): once committed, the group's parked pops can claim them at once instead of at
    /// their next recheck, from the partition's hint instead of a walk.
    pub reopened: Option<Reopened>,
    /// For the series: the queue, and what the plan did to its messages.
    pub tally: Option<(Uuid, Tally)>,
}

impl From<AckPlan> for Acked {
    fn from(plan: AckPlan) -> Acked {
        Acked {
            plan,
            reopened: None,
            tally: None,
        }
    }
}

/// Where an ack left its group something to read.
#[derive(Debug, Clone)]
pub(crate) struct Reopened {
    pub queue: String,
    pub queue_id: Uuid,
    pub partition_id: Uuid,
}

/// What a carried-out plan did, for the series: messages the cursor passed, nacks taken,
/// dead letters filed.
fn tally(plan: &AckPlan, from: i64, items: &[AckItem]) -> Tally {
    let nacks = items
        .iter()
        .zip(&plan.items)
        .filter(|(i, o)| {
            o.success && !o.noop && matches!(i.status, AckStatus::Failed | AckStatus::Retry)
        })
        .count();
    Tally {
        completed: (plan.committed - from).max(0),
        failed: nacks as i64,
        dead_lettered: i64::from(plan.dead_letter.is_some()),
        ..Tally::default()
    }
}

impl Service {
    /// Counts what became of each ack item, for `/metrics/prometheus`.
    pub(crate) fn count_ack_outcomes(&self, items: &[ItemOutcome]) {
        for o in items {
            let outcome = match (o.success, o.dlq) {
                (false, _) => Outcome::AckRefused,
                (true, true) => Outcome::DeadLettered,
                (true, false) => Outcome::Acked,
            };
            self.runtime.activity.ended(outcome, 1);
        }
    }

    /// Counts committed acks per queue for the series.
    pub(crate) fn tally_acked<'a>(&self, acked: impl IntoIterator<Item = &'a Acked>) {
        for (queue, t) in acked.into_iter().filter_map(|a| a.tally) {
            self.runtime.tallies.add(queue, t);
        }
    }
}

impl Service {
    /// Acks for consumer group `group`; one outcome per ack, in request order.
    pub async fn ack(
        &self,
        tenant: &str,
        acks: Vec<SentAck>,
        group: &str,
    ) -> Result<Vec<ItemOutcome>, Error> {
        let _timer = self.runtime.activity.request(Op::Ack);
        let n = acks.len();
        let (mut groups, positions): (Vec<AckGroup>, Vec<Vec<usize>>) =
            group_acks(acks, group).into_iter().unzip();
        self.know_offsets(&mut groups);
        let leases: Vec<Option<String>> = groups.iter().map(|g| g.lease_id.clone()).collect();
        let plans = self
            .acks
            .submit(|reply| AckJob {
                tenant: tenant.to_string(),
                groups,
                reply,
            })
            .await?;
        self.forget_ended(&leases, &plans);
        let mut out = vec![ItemOutcome::default(); n];
        for (idx, plan) in positions.iter().zip(plans) {
            for (&pos, outcome) in idx.iter().zip(plan.items) {
                out[pos] = outcome;
            }
        }
        let acknowledged = out.iter().filter(|o| o.success).count();
        self.runtime.activity.carried(Op::Ack, acknowledged);
        self.count_ack_outcomes(&out);
        Ok(out)
    }

    /// Fills in the offsets this broker delivered under each group's lease, where it knows
    /// them.
    pub(crate) fn know_offsets<'a>(&self, groups: impl IntoIterator<Item = &'a mut AckGroup>) {
        for g in groups {
            if let Some(lease) = &g.lease_id {
                g.known = self.runtime.deliveries.resolve(
                    lease,
                    &g.partition_id,
                    g.items.iter().map(|i| i.transaction_id.as_str()),
                );
            }
        }
    }

    /// Forgets the deliveries of leases the acks ended.
    pub(crate) fn forget_ended(&self, leases: &[Option<String>], plans: &[AckPlan]) {
        for (lease, plan) in leases.iter().zip(plans) {
            if let Some(lease) = lease {
                if plan.items.iter().any(|o| o.lease_released) {
                    self.runtime.deliveries.forget(lease);
                }
            }
        }
    }
}

/// Groups acks by (partitionId, leaseId) in first-appearance order; returns the groups and,
/// per group, the request positions of its items.
pub(crate) fn group_acks(acks: Vec<SentAck>, group: &str) -> Vec<(AckGroup, Vec<usize>)> {
    let mut groups: Vec<(AckGroup, Vec<usize>)> = Vec::new();
    for (i, a) in acks.into_iter().enumerate() {
        match groups
            .iter_mut()
            .find(|(g, _)| g.partition_id == a.partition_id && g.lease_id == a.lease_id)
        {
            Some((g, idx)) => {
                g.items.push(a);
                idx.push(i);
            }
            None => groups.push((
                AckGroup {
                    partition_id: a.partition_id.clone(),
                    group: group.to_string(),
                    lease_id: a.lease_id.clone(),
                    items: vec![a],
                    known: None,
                    release_at_once: false,
                },
                vec![i],
            )),
        }
    }
    groups
}

/// The group's partition id, unless it is not a UUID (then the database answers it).
fn partition_uuid(g: &AckGroup) -> Option<Uuid> {
    Uuid::parse_str(&g.partition_id).ok()
}

/// (request, group of the request).
type Slot = (usize, usize);

pub(crate) struct AckJob {
    tenant: String,
    groups: Vec<AckGroup>,
    reply: oneshot::Sender<Vec<AckPlan>>,
}

impl Fusable for AckJob {
    fn tenant(&self) -> &str {
        &self.tenant
    }

    fn weight(&self) -> usize {
        self.groups.iter().map(|g| g.items.len()).sum()
    }

    fn place(&self, s: &Service) -> Option<Place> {
        let ids: Option<Vec<Uuid>> = self.groups.iter().map(partition_uuid).collect();
        s.runtime.placements.of_ids(ids?)
    }

    /// Every group of every request in one transaction, in the global lock order. A group
    /// whose partition id is not a UUID fails in the database by design (its own error
    /// message is the answer), so it runs on its own, as does every group when the fused
    /// transaction fails.
    async fn flush(s: &Service, tenant: &str, jobs: Vec<AckJob>) {
        let (mut fused, mut alone): (Vec<Slot>, Vec<Slot>) = jobs
            .iter()
            .enumerate()
            .flat_map(|(j, job)| (0..job.groups.len()).map(move |g| (j, g)))
            .partition(|&(j, g)| Uuid::parse_str(&jobs[j].groups[g].partition_id).is_ok());
        let group = |&(j, g): &Slot| &jobs[j].groups[g];
        fused.sort_by_key(|slot| {
            let g = group(slot);
            (Uuid::parse_str(&g.partition_id).ok(), g.group.clone())
        });
        let mut done: HashMap<Slot, Acked> = HashMap::new();
        if s.store.one_statement_paths() {
            done.extend(complete_in_lease(s, tenant, &mut fused, group).await);
        }
        // Often every group completed in its lease above: no transaction is left to open.
        if !fused.is_empty() {
            let in_order: Vec<&AckGroup> = fused.iter().map(group).collect();
            match run_groups(s, tenant, &in_order).await {
                Ok(acked) => done.extend(fused.iter().copied().zip(acked)),
                Err(_) => alone.extend(fused),
            }
        }
        let singles =
            futures::future::join_all(alone.iter().map(|slot| run_group(s, tenant, group(slot))))
                .await;
        done.extend(alone.into_iter().zip(singles));
        // Committed: announced before any answer, as a push is.
        let reopened = done.iter().filter_map(|(slot, a)| {
            let r = a.reopened.clone()?;
            Some((
                r.queue,
                r.queue_id,
                r.partition_id,
                group(slot).group.clone(),
            ))
        });
        s.announce(&Announcement::reopened_partitions(tenant, reopened));
        s.tally_acked(done.values());
        for (j, job) in jobs.into_iter().enumerate() {
            let mine = (0..job.groups.len())
                .map(|g| done.remove(&(j, g)).expect("every group has a plan").plan)
                .collect();
            let _ = job.reply.send(mine);
        }
    }
}

/// Carries out the groups among `slots` that complete messages of their live lease (see
/// [`completion`]) with one statement and no transaction of its own: one round trip where the
/// full path takes four. Takes them out of `slots` and returns their plans; the rest (and any
/// whose row says otherwise: the lease ended, an offset already committed) are left for the
/// full path, which decides them as the contract says. A statement the database refused
/// committed nothing, so its groups are left too; one whose connection was lost may have
/// committed, and its groups are answered as a failed commit is.
async fn complete_in_lease<'a>(
    s: &Service,
    tenant: &str,
    slots: &mut Vec<Slot>,
    group: impl Fn(&Slot) -> &'a AckGroup,
) -> Vec<(Slot, Acked)> {
    let mut seen = HashSet::new();
    let (mine, completions): (Vec<Slot>, Vec<Completion<'_>>) = slots
        .iter()
        .filter_map(|slot| Some((*slot, completion(group(slot))?)))
        .filter(|(_, c)| seen.insert((c.partition, c.group)))
        .unzip();
    if mine.is_empty() {
        return Vec::new();
    }
    let carried = match s.store.client().await {
        Ok(client) => {
            cursor::complete_in_lease(&*client, client.layout(), tenant, &completions).await
        }
        Err(e) => Err(e),
    };
    let carried = match carried {
        Ok(rows) => rows,
        Err(e) if e.was_refused() || matches!(e, StoreError::Pool(_)) => {
            tracing::debug!(error = %e, "acks in lease left to the full path");
            return Vec::new();
        }
        Err(e) => {
            tracing::warn!(error = %e, "ack completion statement failed");
            slots.retain(|slot| !mine.contains(slot));
            let refused = |slot: &Slot| AckPlan::refuse_all(group(slot).items.len(), FLUSH_FAILED);
            return mine
                .iter()
                .map(|slot| (*slot, refused(slot).into()))
                .collect();
        }
    };
    let done: Vec<(Slot, Acked)> = carried
        .into_iter()
        .map(|row| {
            let slot = mine[row.index];
            (slot, completed(group(&slot), &completions[row.index], row))
        })
        .collect();
    slots.retain(|slot| !done.iter().any(|(d, _)| d == slot));
    done
}

/// The one-statement form of a group, when its outcome depends on the cursor row alone: every
/// item `completed`, each offset known from this broker's delivery under the named lease (so
/// no index lookup), and nothing asked beyond the contract (no `release_at_once`).
fn completion(g: &AckGroup) -> Option<Completion<'_>> {
    if g.release_at_once || g.items.iter().any(|i| i.status != AckStatus::Completed) {
        return None;
    }
    let known = g.known.as_ref()?;
    Some(Completion {
        partition: partition_uuid(g)?,
        group: &g.group,
        lease: Uuid::parse_str(g.lease_id.as_deref()?).ok()?,
        lowest: *known.iter().min()?,
        highest: *known.iter().max()?,
    })
}

/// The plan the contract gives the completion on the row as it was: what the statement
/// wrote, as the full path would have.
fn completed(g: &AckGroup, asked: &Completion<'_>, row: Completed) -> Acked {
    let items = known_items(g, g.known.as_deref().unwrap_or_default());
    let view = CursorView {
        committed: row.committed,
        live_lease_end: Some(row.lease_end),
        last_lease_end: Some(row.lease_end),
        retry_count: row.retry_count,
    };
    let plan = ack_plan::plan(
        &view,
        &policy(QueueOptions::from_stored(&row.options)),
        true,
        &items,
    );
    let written = (asked.highest, row.lease_end <= asked.highest);
    if (plan.committed, plan.release_lease) != written {
        // The statement's conditions admit only rows where the two agree.
        tracing::error!(?written, plan = ?(plan.committed, plan.release_lease), "ack completion differs from its plan");
        debug_assert!(false, "ack completion differs from its plan");
    }
    Acked {
        reopened: plan.reopens(row.next_offset).then_some(Reopened {
            queue: row.queue,
            queue_id: row.queue_id,
            partition_id: asked.partition,
        }),
        tally: Some((row.queue_id, tally(&plan, row.committed, &items))),
        plan,
    }
}

/// The group's items with the offsets given, aligned.
fn known_items(g: &AckGroup, offsets: &[i64]) -> Vec<AckItem> {
    g.items
        .iter()
        .zip(offsets)
        .map(|(i, &offset)| AckItem {
            status: i.status,
            offset: Some(offset),
            error: i.error.clone(),
        })
        .collect()
}

/// The retry rules of a queue.
fn policy(options: QueueOptions) -> Policy {
    Policy {
        retry_limit: options.retry_limit(),
        dead_letter: options.dead_letter_enabled(),
    }
}

/// Runs one group in its own transaction and maps every failure to the contract's per-item
/// texts: no connection -> `pool`; a statement refusing the client's own data -> the
/// database's message (a malformed `partitionId` lands here); any other statement failing,
/// or the commit -> `ack flush failed; ...` (nothing was written, the lease redelivers),
/// the database's text logged, never sent: it may name internals such as a worker's host.
async fn run_group(s: &Service, tenant: &str, group: &AckGroup) -> Acked {
    let n = group.items.len();
    match committed(s, tenant, std::slice::from_ref(&group)).await {
        Commit::Done(mut acked) => acked.pop().expect("one group"),
        Commit::Failed => AckPlan::refuse_all(n, FLUSH_FAILED).into(),
        Commit::NotRun(StoreError::Pool(_)) => AckPlan::refuse_all(n, POOL).into(),
        Commit::NotRun(e) if e.is_client_error() => AckPlan::refuse_all(n, &e.to_string()).into(),
        Commit::NotRun(e) => {
            tracing::error!(error = %e, "ack group failed");
            AckPlan::refuse_all(n, FLUSH_FAILED).into()
        }
    }
}

/// Runs several groups in one transaction, in the order given (which must be the global lock
/// order: by partition, then group), so many acks share one commit. A statement failing is
/// returned as the error, for the caller to fall back to [`run_group`] per group.
async fn run_groups(
    s: &Service,
    tenant: &str,
    groups: &[&AckGroup],
) -> Result<Vec<Acked>, StoreError> {
    let refuse = |error: &str| {
        groups
            .iter()
            .map(|g| AckPlan::refuse_all(g.items.len(), error).into())
            .collect()
    };
    match committed(s, tenant, groups).await {
        Commit::Done(acked) => Ok(acked),
        Commit::Failed => Ok(refuse(FLUSH_FAILED)),
        Commit::NotRun(StoreError::Pool(_)) => Ok(refuse(POOL)),
        Commit::NotRun(e) => Err(e),
    }
}

/// How a transaction of ack groups ended.
enum Commit {
    /// Committed: the plans carried out.
    Done(Vec<Acked>),
    /// The COMMIT itself failed: not retried, since whether it took is unknown; answered as
    /// the contract says (the lease expires and redelivers).
    Failed,
    /// A statement before the COMMIT failed, after the retries a safe failure gets: nothing
    /// was written.
    NotRun(StoreError),
}

/// The groups in one transaction, retried while the failure is safe to retry (a failed
/// commit is not: see [`Commit::Failed`]).
async fn committed(s: &Service, tenant: &str, groups: &[&AckGroup]) -> Commit {
    let run = retrying(|| async {
        let mut client = s.store.client().await?;
        let tx = client.begin().await?;
        let mut acked = Vec::with_capacity(groups.len());
        for g in groups {
            acked.push(ack_group(&tx, tenant, g, LeaseCheck::Strict).await?);
        }
        fusion::learn_places(&tx, s, groups.iter().copied().filter_map(partition_uuid)).await?;
        Ok(match tx.commit().await {
            Ok(()) => Commit::Done(acked),
            Err(e) => {
                tracing::warn!(error = %e, "ack commit failed");
                Commit::Failed
            }
        })
    })
    .await;
    run.unwrap_or_else(Commit::NotRun)
}

/// Resolves and commits one group inside the caller's transaction and returns the plan that
/// was carried out (its `items` align with `group.items`).
pub(crate) async fn ack_group(
    tx: &Tx<'_>,
    tenant: &str,
    group: &AckGroup,
    check: LeaseCheck,
) -> Result<Acked, StoreError> {
    let n = group.items.len();
    // A partition id only PostgreSQL can parse (or none at all) is keyed with the nil id here
    // and resolved again below, once the row names the partition.
    let sent_partition = Uuid::parse_str(&group.partition_id).ok();
    let keyed = match &group.known {
        Some(_) => Vec::new(),
        None => hashes(group, sent_partition.unwrap_or(Uuid::nil())),
    };
    let Some(c) = cursor::lock(tx, tenant, &group.partition_id, &group.group, &keyed).await? else {
        let error = match cursor::owner(tx, &group.partition_id).await? {
            Some(t) if t != tenant => NOT_OWNED,
            _ => CONSUMER_NOT_FOUND,
        };
        return Ok(AckPlan::refuse_all(n, error).into());
    };
    let lease_ok = match &group.lease_id {
        Some(sent) => c.live && c.lease_id.is_some() && Uuid::parse_str(sent).ok() == c.lease_id,
        None => true,
    };
    if !lease_ok && check == LeaseCheck::Strict {
        return Ok(AckPlan::refuse_all(n, INVALID_LEASE).into());
    }
    let offsets = match &group.known {
        Some(known) => known.iter().copied().map(Some).collect(),
        None if sent_partition != Some(c.partition_id) => {
            cursor::resolve(tx, c.partition_id, &hashes(group, c.partition_id)).await?
        }
        None => c.offsets.clone(),
    };
    let offsets = match (c.live, c.lease_end) {
        (true, Some(end)) if lease_ok && group.lease_id.is_some() && offsets.contains(&None) => {
            in_lease(tx, group, &c, end, offsets).await?
        }
        _ => offsets,
    };
    let items: Vec<AckItem> = group
        .items
        .iter()
        .zip(offsets)
        .map(|(i, offset)| AckItem {
            status: i.status,
            offset,
            error: i.error.clone(),
        })
        .collect();
    if !lease_ok {
        return Ok(ack_plan::replay(c.committed, &items)
            .unwrap_or_else(|| AckPlan::refuse_all(n, INVALID_LEASE))
            .into());
    }
    carry_out(tx, tenant, group, &c, &items).await
}

/// Fills in what the index could not resolve from the live lease's own range, for an ack
/// naming that lease: the leased segments' frames carry every transaction id, so such an
/// ack resolves however long ago the message was pushed (the deduplication window bounds
/// only the index). An ack naming no lease depends on the index alone, as the seed says.
async fn in_lease(
    tx: &Tx<'_>,
    group: &AckGroup,
    c: &Locked,
    lease_end: i64,
    mut offsets: Vec<Option<i64>>,
) -> Result<Vec<Option<i64>>, StoreError> {
    let missing: Vec<usize> = (0..offsets.len())
        .filter(|&i| offsets[i].is_none())
        .collect();
    let ids: Vec<&str> = missing
        .iter()
        .map(|&i| group.items[i].transaction_id.as_str())
        .collect();
    let found =
        cursor::resolve_in_range(&**tx, c.partition_id, c.committed, lease_end, &ids).await?;
    for (i, offset) in missing.into_iter().zip(found) {
        offsets[i] = offset;
    }
    Ok(offsets)
}

/// The items' transaction index keys in `partition`.
fn hashes(group: &AckGroup, partition: Uuid) -> Vec<Uuid> {
    group
        .items
        .iter()
        .map(|i| tx_hash(partition, &i.transaction_id))
        .collect()
}

/// Plans the acks against the locked cursor and writes what the plan says: the cursor, and
/// the dead letter when one is due.
async fn carry_out(
    tx: &Tx<'_>,
    tenant: &str,
    group: &AckGroup,
    c: &Locked,
    items: &[AckItem],
) -> Result<Acked, StoreError> {
    let view = CursorView {
        committed: c.committed,
        live_lease_end: if c.live { c.lease_end } else { None },
        last_lease_end: c.lease_end,
        retry_count: c.retry_count,
    };
    let policy = policy(QueueOptions::from_stored(&c.options));
    let mut plan = ack_plan::plan(&view, &policy, group.lease_id.is_some(), items);
    if group.release_at_once && c.live {
        plan = plan.releasing();
    }
    if !plan.changed {
        return Ok(plan.into());
    }
    cursor::write(
        tx,
        c.partition_id,
        &group.group,
        plan.committed,
        plan.retry_count,
        plan.release_lease,
    )
    .await?;
    if let Some(dl) = &plan.dead_letter {
        let letter = Letter {
            tenant,
            queue_id: c.queue_id,
            partition_id: c.partition_id,
            group: &group.group,
            offset: dl.offset,
            reason: &dl.reason,
            retry_count: c.retry_count,
        };
        dead_letters::file(tx, &letter).await?;
    }
    let reopened = plan.reopens(c.next_offset).then(|| Reopened {
        queue: c.queue.clone(),
        queue_id: c.queue_id,
        partition_id: c.partition_id,
    });
    let tally = Some((c.queue_id, tally(&plan, c.committed, items)));
    Ok(Acked {
        plan,
        reopened,
        tally,
    })
}
