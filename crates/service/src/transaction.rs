//! The transaction route's use case: acks and pushes in ONE PostgreSQL transaction, so a
//! pipeline stage hands work forward with no window in which the ack landed and the push did
//! not; with them the `kv` rider's key/value operations (`crate::kv`) and the `timers`
//! rider's schedules and cancels (`crate::timers`), so state a stage keeps and the timers it
//! sets commit with its ack. Any refused ack, and any `required` KV operation that does not apply,
//! rolls the bundle back; a retried bundle is harmless (push dedup, ack noop). Not fused with
//! other requests.

use std::collections::BTreeMap;
use std::sync::Arc;

use regent_memory::tallies::Tally;
use regent_memory::{Announcement, Op};
use regent_rules::ack_plan::{ItemOutcome, INVALID_LEASE};
use regent_store::append::Dedup;
use regent_store::lease::all_live;
use regent_store::maintenance;
use regent_store::{commit_if, StoreError, Tx};
use uuid::Uuid;

use crate::ack::{ack_group, group_acks, AckGroup, LeaseCheck, SentAck};
use crate::kv::{self, KvFailed, KvOp, KvOutcome};
use crate::push::{append, hold, prepare, queued, PushItem, Verdict};
use crate::timers::{apply_timer_ops, TimerOp, TimerOutcome};
use crate::{Error, Service};

/// One operation of a bundle.
pub enum BundleOp {
    /// An ack, for the consumer group named.
    Ack {
        ack: SentAck,
        group: String,
    },
    Push(PushItem),
}

pub struct Bundle {
    /// In request order; a push operation with several items is one entry per item.
    pub ops: Vec<BundleOp>,
    /// Leases that must be live for the bundle to commit.
    pub required_leases: Vec<String>,
    /// The `kv` rider: applied in order, after the partitions are found and before the acks.
    pub kv: Vec<KvOp>,
    /// The `timers` rider: applied in order, after the `kv` rider.
    pub timers: Vec<TimerOp>,
}

/// What became of a bundle.
pub enum BundleOutcome {
    /// Committed: one outcome per operation, in request order, then the riders'.
    Committed(Committed),
    /// Rolled back, and why.
    Refused(String),
    /// Rolled back: a `required` KV operation did not apply.
    KvPrecondition(KvFailed),
}

/// A committed bundle's outcomes.
pub struct Committed {
    /// One per operation, in request order.
    pub ops: Vec<OpOutcome>,
    /// One per KV operation.
    pub kv: Vec<KvOutcome>,
    /// One per timer operation.
    pub timers: Vec<TimerOutcome>,
}

pub enum OpOutcome {
    Ack {
        transaction_id: String,
        outcome: ItemOutcome,
    },
    Push {
        item: PushItem,
        verdict: Verdict,
    },
}

/// The bundle's operations sorted out: acks grouped in the global lock order, pushes with
/// their request positions.
struct Sorted {
    /// Each group with the request positions of its items.
    groups: Vec<(AckGroup, Vec<usize>)>,
    /// Every ack, by request position: its transaction id.
    ack_ids: BTreeMap<usize, String>,
    pushes: Vec<(usize, PushItem)>,
    required: Vec<String>,
    kv: Vec<KvOp>,
    timers: Vec<TimerOp>,
}

/// Why a bundle was rolled back.
enum Refusal {
    Text(String),
    Kv(KvFailed),
}

impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal::Text(why)
    }
}

/// What the bundle's transaction did.
struct Done {
    acks: Vec<(usize, ItemOutcome)>,
    verdicts: Vec<Verdict>,
    written: Announcement,
    /// What the acks did, per queue, for the series.
    tallies: Vec<(Uuid, Tally)>,
    kv: Vec<KvOutcome>,
    timers: Vec<TimerOutcome>,
}

impl Service {
    pub async fn transaction(
        &self,
        tenant: &Arc<str>,
        bundle: Bundle,
    ) -> Result<BundleOutcome, Error> {
        let _timer = self.runtime.activity.request(Op::Transaction);
        let total = bundle.ops.len();
        let mut sorted = sort(bundle);
        self.know_offsets(sorted.groups.iter_mut().map(|(g, _)| g));
        let items: Vec<PushItem> = sorted.pushes.iter().map(|(_, p)| p.clone()).collect();
        // The rider's schedules are checked against the cap as `POST /api/v1/timers` checks
        // them: a timer stores its message only when it fires.
        let schedules = sorted
            .timers
            .iter()
            .filter(|o| matches!(o, TimerOp::Schedule(_)))
            .count();
        if schedules > 0 {
            self.reserve(tenant, schedules as i64).await?.released();
        }
        let room = self.reserve(tenant, items.len() as i64).await?;
        let mut done = match self.run_bundle(tenant, &sorted, &items).await? {
            Ok(done) => done,
            Err(why) => {
                room.released();
                return Ok(match why {
                    Refusal::Text(why) => BundleOutcome::Refused(why),
                    Refusal::Kv(failed) => {
                        self.kv().count(tenant, None);
                        BundleOutcome::KvPrecondition(failed)
                    }
                });
            }
        };
        let n = queued(&done.verdicts);
        room.committed(n);
        self.runtime.activity.carried(Op::Transaction, n as usize);
        self.tally_pushed(&done.written, &done.verdicts);
        self.count_outcomes(&done.verdicts);
        let acked: Vec<ItemOutcome> = done.acks.iter().map(|(_, o)| o.clone()).collect();
        self.count_ack_outcomes(&acked);
        for &(queue, t) in &done.tallies {
            self.runtime.tallies.add(queue, t);
        }
        self.announce(&done.written);
        let kv = std::mem::take(&mut done.kv);
        if !sorted.kv.is_empty() {
            self.kv().count(tenant, Some(&kv));
        }
        let timers = std::mem::take(&mut done.timers);
        self.timers().committed(tenant, &sorted.timers, &timers);
        Ok(BundleOutcome::Committed(Committed {
            ops: outcomes(total, &mut sorted, done),
            kv,
            timers,
        }))
    }

    /// The bundle's one transaction: partitions first, the leases checked before the acks
    /// run (they may end these very leases), the KV operations, acks in lock order, then the
    /// pushes. `Ok(Err)` is a business refusal: rolled back, answered 200 with `success:
    /// false`.
    async fn run_bundle(
        &self,
        tenant: &str,
        sorted: &Sorted,
        items: &[PushItem],
    ) -> Result<Result<Done, Refusal>, Error> {
        Ok(commit_if!(self.store, |tx| {
            // The drain lock (shared) first, then partition creation: the global lock order.
            let buffering = self.runtime.switches.buffering(tenant)
                && maintenance::still_buffering(tx, tenant).await?;
            let prepared = prepare(tx, self, tenant, items).await?;
            // A bundle whose leases are gone is still accepted when every ack in it replays
            // an ack already committed, so re-sending a committed bundle after a lost answer
            // is harmless.
            let leases_live = all_live(tx, tenant, &sorted.required).await?;
            let invalid = || format!("ACK operation failed: {INVALID_LEASE}");
            if !leases_live && sorted.groups.is_empty() {
                return Ok(Err(invalid().into()));
            }
            // KV rows, then timers, are locked after the partitions and before the cursors,
            // in every bundle: the global lock order.
            let kv = match kv::apply(tx, tenant, &sorted.kv).await? {
                Ok(kv) => kv,
                Err(failed) => return Ok(Err(Refusal::Kv(failed))),
            };
            let timers = apply_timer_ops(tx, tenant, &sorted.timers).await?;
            let (acks, reopened, tallies) = match run_acks(tx, tenant, &sorted.groups).await? {
                Ok(done) => done,
                Err(why) => return Ok(Err(why.into())),
            };
            if !leases_live && !acks.iter().all(|(_, o)| o.noop) {
                return Ok(Err(invalid().into()));
            }
            // Careful: an optimistic duplicate would void the acks' work along with the pushes.
            // Under push maintenance the pushes wait in the buffer, in this same transaction.
            let verdicts = if buffering {
                hold(tx, tenant, &prepared).await?
            } else {
                append(tx, &prepared, Dedup::Careful).await?
            };
            if let Some(Verdict::Failed { error }) = verdicts
                .iter()
                .find(|v| matches!(v, Verdict::Failed { .. }))
            {
                return Ok(Err(format!("PUSH operation failed: {error}").into()));
            }
            let mut written = prepared.written(tenant);
            for (r, group) in reopened {
                written.add_reopened(r.queue, r.queue_id, r.partition_id, group);
            }
            Ok(Ok(Done {
                acks,
                verdicts,
                written,
                tallies,
                kv,
                timers,
            }))
        })?)
    }
}

type AcksDone = (
    Vec<(usize, ItemOutcome)>,
    Vec<(crate::ack::Reopened, String)>,
    Vec<(Uuid, Tally)>,
);

/// Every ack group inside the bundle's transaction; `Ok(Err)` when one is refused.
async fn run_acks(
    tx: &Tx<'_>,
    tenant: &str,
    groups: &[(AckGroup, Vec<usize>)],
) -> Result<Result<AcksDone, String>, StoreError> {
    let mut out = Vec::new();
    let mut reopened = Vec::new();
    let mut tallies = Vec::new();
    for (group, idx) in groups {
        let acked = match ack_group(tx, tenant, group, LeaseCheck::AllowReplay).await {
            Ok(a) => a,
            Err(e) if e.is_client_error() => return Ok(Err(format!("ACK operation failed: {e}"))),
            Err(e) => return Err(e),
        };
        reopened.extend(acked.reopened.map(|r| (r, group.group.clone())));
        tallies.extend(acked.tally);
        for (&pos, o) in idx.iter().zip(acked.plan.items) {
            if !o.success {
                let why = o.error.clone().unwrap_or_default();
                return Ok(Err(format!("ACK operation failed: {why}")));
            }
            out.push((pos, o));
        }
    }
    Ok(Ok((out, reopened, tallies)))
}

/// Sorts a bundle's operations: an ack without its own `leaseId` borrows the bundle's single
/// required lease; acks are grouped per consumer group, then by (partition, lease), and the
/// groups sorted by (partition, group): the global lock order.
fn sort(bundle: Bundle) -> Sorted {
    let mut required = bundle.required_leases;
    required.sort();
    required.dedup();
    let mut by_group: BTreeMap<String, Vec<(usize, SentAck)>> = BTreeMap::new();
    let mut pushes = Vec::new();
    let mut ack_ids = BTreeMap::new();
    for (i, op) in bundle.ops.into_iter().enumerate() {
        match op {
            BundleOp::Ack { mut ack, group } => {
                if ack.lease_id.is_none() && required.len() == 1 {
                    ack.lease_id = Some(required[0].clone());
                }
                ack_ids.insert(i, ack.transaction_id.clone());
                by_group.entry(group).or_default().push((i, ack));
            }
            BundleOp::Push(p) => pushes.push((i, p)),
        }
    }
    let mut groups: Vec<(AckGroup, Vec<usize>)> = Vec::new();
    for (g, list) in by_group {
        let (positions, acks): (Vec<usize>, Vec<SentAck>) = list.into_iter().unzip();
        for (group, idx) in group_acks(acks, &g) {
            groups.push((group, idx.iter().map(|&k| positions[k]).collect()));
        }
    }
    groups.sort_by(|a, b| (&a.0.partition_id, &a.0.group).cmp(&(&b.0.partition_id, &b.0.group)));
    Sorted {
        groups,
        ack_ids,
        pushes,
        required,
        kv: bundle.kv,
        timers: bundle.timers,
    }
}

/// One outcome per operation, in request order.
fn outcomes(total: usize, sorted: &mut Sorted, done: Done) -> Vec<OpOutcome> {
    let mut out: Vec<Option<OpOutcome>> = (0..total).map(|_| None).collect();
    for (pos, outcome) in done.acks {
        let transaction_id = sorted.ack_ids.remove(&pos).unwrap_or_default();
        out[pos] = Some(OpOutcome::Ack {
            transaction_id,
            outcome,
        });
    }
    for ((pos, item), verdict) in std::mem::take(&mut sorted.pushes)
        .into_iter()
        .zip(done.verdicts)
    {
        out[pos] = Some(OpOutcome::Push { item, verdict });
    }
    out.into_iter()
        .map(|o| o.expect("every operation has an outcome"))
        .collect()
}
