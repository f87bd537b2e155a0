//! One pop attempt: find the target's queues, then one transaction that claims and reads
//! over them, delivers within the batch, and trims or releases the leases to match.

use std::sync::Arc;
use std::time::{Duration, Instant};

use uuid::Uuid;

use regent_memory::deliveries::Delivered;
use regent_memory::known::Known;
use regent_memory::sweeps::Due;
use regent_memory::tallies::Tally;
use regent_memory::Op;
use regent_rules::delivery;
use regent_rules::naming::QUEUE_MODE;
use regent_rules::options::QueueOptions;
use regent_rules::subscription::StartPoint;
use regent_store::claim::{self, Claim, ClaimedPartition, EmptyReason, Finish, Start, Sweep};
use regent_store::queues::{self, QueueRow};
use regent_store::stats;
use regent_store::{frames, in_transaction, StoreError, StoredMessage, Tx};

use super::{DeliveredPartition, Delivery, PopRequest, Popped, Target};
use crate::{Error, Handover, Service};

/// A queue of the target, with its options read once.
struct Queue {
    name: String,
    /// Its id and its options as stored.
    known: Known,
    options: QueueOptions,
}

impl Queue {
    fn of(row: QueueRow) -> Queue {
        Queue::known(
            row.name,
            Known {
                id: row.id,
                queue_id: row.id,
                options: Arc::new(row.options),
            },
        )
    }

    fn known(name: String, known: Known) -> Queue {
        Queue {
            options: QueueOptions::from_stored(&known.options),
            name,
            known,
        }
    }

    fn id(&self) -> Uuid {
        self.known.id
    }
}

/// What a claim of one queue does besides claiming: whether it sweeps first, and which
/// partitions it tries before walking every cursor. Planned once per claim: planning counts
/// the sweep as done and takes the hints.
#[derive(Clone)]
struct Plan {
    queue: Uuid,
    sweep: Option<Due>,
    hint: Vec<Uuid>,
    /// Where a walk over the group's cursors starts (`Claim::after`).
    after: Option<Uuid>,
}

/// What the claim transaction took from one queue's partition.
struct Taken {
    queue: usize,
    partition_id: Uuid,
    partition: String,
    messages: Vec<StoredMessage>,
    /// The furthest any earlier lease of the group reached: offsets up to it were delivered
    /// before.
    delivered_before: Option<i64>,
}

/// What a pop's claim found: the target's queues (none: no such queue), what it took of
/// them, and why a partition route took nothing.
pub(super) struct Found {
    queues: Arc<[Queue]>,
    taken: Vec<Taken>,
    reason: Option<EmptyReason>,
}

/// One pop's budget in a claim, and the lease its partitions go to.
#[derive(Clone, Copy)]
pub(super) struct Ask {
    pub lease_id: Uuid,
    pub budget: delivery::Ask,
}

impl Ask {
    pub(super) fn of(req: &PopRequest, lease_id: Uuid) -> Ask {
        Ask {
            lease_id,
            budget: delivery::Ask {
                batch: req.batch,
                partitions: req.partitions,
            },
        }
    }
}

impl Service {
    pub(super) async fn attempt(
        self: &Arc<Self>,
        tenant: &str,
        req: &PopRequest,
    ) -> Result<Popped, Error> {
        let lease_id = Uuid::now_v7();
        // Before the claim: if this request is dropped from here on, what it claimed is
        // released.
        let handover = (!req.auto_ack).then(|| Handover::open(self, lease_id, tenant));
        let found = match &req.target {
            Target::Queue(queue) => self.claim_in_lane(tenant, queue, req, lease_id).await?,
            _ => self.claim_alone(tenant, req, lease_id).await?,
        };
        let Found {
            queues,
            taken,
            reason,
        } = found;
        if taken.is_empty() {
            if let Some(h) = handover {
                h.claimed_nothing();
            }
            if queues.is_empty() {
                return Ok(Popped::Nothing(match req.target.partition_name() {
                    Some(_) => "partition_not_found",
                    None => "no_available_partition",
                }));
            }
            return Ok(empty(reason));
        }
        self.runtime
            .activity
            .carried(Op::Pop, taken.iter().map(|t| t.messages.len()).sum());
        self.tally_delivered(&queues, &taken, req.auto_ack);
        let lease = (!req.auto_ack).then_some(lease_id);
        if let Some(lease) = lease {
            self.remember(lease, &queues, &taken);
        }
        Ok(Popped::Delivered(Delivery {
            lease_id: lease,
            partitions: self.opened(&queues, taken),
            handover,
        }))
    }

    /// One pop's claim in a transaction of its own: over the target's queues, and for a
    /// partition route, why it found nothing.
    pub(super) async fn claim_alone(
        &self,
        tenant: &str,
        req: &PopRequest,
        lease_id: Uuid,
    ) -> Result<Found, Error> {
        let queues: Arc<[Queue]> = self.target_queues(tenant, &req.target).await?.into();
        if queues.is_empty() {
            return Ok(Found::none(&queues));
        }
        let partition = req.target.partition_name();
        let (taken, reason) = in_transaction!(self.store, |tx| {
            let taken = self.claim_all(tx, &queues, req, lease_id).await?;
            let reason = match partition {
                Some(name) if taken.is_empty() => {
                    let q = &queues[0];
                    let window = q.options.window_buffer_seconds();
                    Some(claim::diagnose_empty(tx, q.id(), name, &req.group, window).await?)
                }
                _ => None,
            };
            Ok((taken, reason))
        })?;
        Ok(Found {
            queues,
            taken,
            reason,
        })
    }

    /// Several pops of `queue` (`req` is the first of them; they share its queue, group and
    /// acking) in one transaction, the queue's lookup included, and one claim: what each
    /// took, in the order asked. Pops that all wait (`waiting`) of a group whose last walk
    /// found nothing and that nothing has woken since (`regent_memory::quiet`) take nothing
    /// without a claim, and park.
    pub(super) async fn claim_together(
        &self,
        tenant: &str,
        queue: &str,
        req: &PopRequest,
        asks: &[Ask],
        waiting: bool,
    ) -> Result<Vec<Found>, Error> {
        let mut plan = None;
        if let Some(q) = self.known_queue(tenant, queue, req) {
            let p = self.plan_claim(&q, req, asks.iter().map(|a| a.budget.partitions).sum());
            // A sweep writes cursors and group statistics with the claim: the full way.
            if p.sweep.is_none() {
                let quiet = &self.runtime.quiet;
                // Without hints the claim walks every cursor of the group.
                let walk = p.hint.is_empty() && req.target.partition_name().is_none();
                if walk && waiting && quiet.skips_walk(tenant, queue, &req.group) {
                    self.runtime.activity.skipped_walk();
                    return Ok(found_in(q, asks.iter().map(|_| Vec::new()).collect()));
                }
                // Taken before the claim: a wakeup while it runs voids what it finds.
                let stamp = walk.then(|| (quiet.stamp(tenant, queue), Instant::now()));
                match self.claim_known(&q, req, asks, &p).await? {
                    Some(taken) => {
                        if let (Some((stamp, at)), true) = (stamp, taken.iter().all(Vec::is_empty))
                        {
                            quiet.found_nothing(tenant, queue, &req.group, stamp, at);
                        }
                        return Ok(found_in(q, taken));
                    }
                    None => self.runtime.known_queues.forget(tenant, [(queue, "")]),
                }
            }
            plan = Some(p);
        }
        let claimed = in_transaction!(self.store, |tx| {
            // Pipelined: one round trip for both.
            let durability = async {
                match req.auto_ack {
                    true => Ok(()),
                    false => claim::lease_only(tx).await,
                }
            };
            let (row, ()) = tokio::try_join!(queues::find(&**tx, tenant, queue), durability)?;
            let Some(row) = row else {
                return Ok(None);
            };
            let q = Queue::of(row);
            if tx.one_statement_paths() {
                let known = [(queue, "", q.known.clone())];
                self.runtime.known_queues.learn(tenant, known);
            }
            let taken = self.claim_queue(tx, &q, req, asks, plan.clone()).await?;
            Ok(Some((q, taken)))
        })?;
        let Some((q, taken)) = claimed else {
            let none: Arc<[Queue]> = Arc::new([]);
            return Ok(asks.iter().map(|_| Found::none(&none)).collect());
        };
        Ok(found_in(q, taken))
    }

    /// The queue as this broker knows it, when a pop of it may claim without a transaction:
    /// one PostgreSQL, and a claim that consumes nothing (no autoAck).
    fn known_queue(&self, tenant: &str, queue: &str, req: &PopRequest) -> Option<Queue> {
        if !self.store.one_statement_paths() || req.auto_ack {
            return None;
        }
        let mut known = self.runtime.known_queues.all_of(tenant, [(queue, "")])?;
        Some(Queue::known(queue.to_string(), known.pop()?))
    }

    /// A claim of a known queue for `asks` as one statement that is its own transaction
    /// (`claim::claim_known`): one round trip where the full way takes four (BEGIN, lookup,
    /// claim, COMMIT). A finish, when the sharing needs one, follows as a statement of its
    /// own. `None` when the queue is gone or its options changed: nothing was claimed.
    async fn claim_known(
        &self,
        q: &Queue,
        req: &PopRequest,
        asks: &[Ask],
        plan: &Plan,
    ) -> Result<Option<Vec<Vec<Taken>>>, StoreError> {
        let leases = slots(asks);
        let c = claim_of(q, req, asks, &leases, plan);
        regent_store::retrying(|| async {
            let client = self.store.client().await?;
            let Some(claimed) = claim::claim_known(&client, &c, &q.known.options).await? else {
                return Ok(None);
            };
            let (finishes, taken) = self.settle_walk(q, req, asks, &c, claimed)?;
            claim::finish(&*client, &req.group, &finishes).await?;
            Ok(Some(taken))
        })
        .await
    }

    /// The queues a pop may claim from. The lookup's connection goes back to the pool before
    /// the claim takes another: holding both would let as many concurrent pops as the pool has
    /// connections wait on each other forever.
    async fn target_queues(&self, tenant: &str, target: &Target) -> Result<Vec<Queue>, Error> {
        let client = self.store.client().await?;
        let rows = match target {
            Target::Queue(q) | Target::Partition(q, _) => queues::find(&*client, tenant, q)
                .await?
                .into_iter()
                .collect(),
            Target::Scope { namespace, task } => {
                queues::find_scoped(&client, tenant, namespace.as_deref(), task.as_deref()).await?
            }
        };
        Ok(rows.into_iter().map(Queue::of).collect())
    }

    /// Claims over the queues in order until the batch or the partition count is used up.
    async fn claim_all(
        &self,
        tx: &Tx<'_>,
        queues: &[Queue],
        req: &PopRequest,
        lease_id: Uuid,
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken = Vec::new();
        let (mut batch, mut partitions) = (req.batch, req.partitions);
        for (i, q) in queues.iter().enumerate() {
            if batch == 0 || partitions == 0 {
                break;
            }
            let ask = Ask {
                lease_id,
                budget: delivery::Ask { batch, partitions },
            };
            let mine = self.claim_queue(tx, q, req, &[ask], None).await?;
            for t in mine.into_iter().flatten() {
                batch -= t.messages.len() as i64;
                partitions -= 1;
                taken.push(Taken { queue: i, ..t });
            }
        }
        Ok(taken)
    }

    /// One queue for one pop or several: sweep when due, claim (hinted partitions first) for
    /// all of them at once, share what was claimed among them in order, finish. What each
    /// took, in the order asked. The claim puts the k-th partition under the lease of the pop
    /// that would be served it if every partition had something to deliver (`slots`); where
    /// the sharing differs, the finish hands the partition to its pop's lease (or releases
    /// it), so no pop's lease ever names another's partition.
    async fn claim_queue(
        &self,
        tx: &Tx<'_>,
        q: &Queue,
        req: &PopRequest,
        asks: &[Ask],
        plan: Option<Plan>,
    ) -> Result<Vec<Vec<Taken>>, StoreError> {
        let partition = req.target.partition_name();
        let plan = match plan {
            Some(p) if p.queue == q.id() => p,
            _ => self.plan_claim(q, req, asks.iter().map(|a| a.budget.partitions).sum()),
        };
        let made = match plan.sweep.as_ref().map(sweep_of) {
            Some(which) => {
                claim::sweep(tx, q.id(), &req.group, partition, start(req), which).await?
            }
            None => 0,
        };
        let leases = slots(asks);
        let c = claim_of(q, req, asks, &leases, &plan);
        // A group given cursors is listed at once (a no-op when the snapshot has it already):
        // sent with the claim, in the same round trip.
        let listed = async {
            match made {
                0 => Ok(()),
                n => stats::joined(tx, q.id(), &req.group, n as i64).await,
            }
        };
        let (claimed, ()) = tokio::try_join!(claim::claim(tx, &c), listed)?;
        let (finishes, taken) = self.settle_walk(q, req, asks, &c, claimed)?;
        claim::finish(&**tx, &req.group, &finishes).await?;
        Ok(taken)
    }

    /// Whether to sweep first, and which partitions to try before walking every cursor: once
    /// a second per group (with the full sweep) the claim walks in claim order regardless of
    /// the ready list, so a partition whose hint was lost (its lease expired, another broker
    /// pushed) is served within the interval.
    fn plan_claim(&self, q: &Queue, req: &PopRequest, partitions: i64) -> Plan {
        let partition = req.target.partition_name();
        // A partition route sweeps only its own partition, so it keeps its own clock: it must
        // not stand in for the queue-wide sweep of the same group.
        let sweep_key = match partition {
            Some(p) => format!("{}\u{0}{p}", req.group),
            None => req.group.clone(),
        };
        let due = self.runtime.sweeps.due(q.id(), &sweep_key);
        let hint = match (partition, &due) {
            (Some(_), _) | (None, Due::All) => Vec::new(),
            (None, _) => self
                .runtime
                .ready
                .take(q.id(), &req.group, partitions as usize),
        };
        Plan {
            queue: q.id(),
            sweep: (due != Due::No).then_some(due),
            hint,
            after: self.runtime.ready.walk_from(q.id(), &req.group),
        }
    }

    /// Counts the delivered messages per queue for the series; an auto-acked pop has also
    /// moved its cursor past them.
    fn tally_delivered(&self, queues: &[Queue], taken: &[Taken], auto_ack: bool) {
        let now = chrono::Utc::now();
        for t in taken {
            let n = t.messages.len() as i64;
            let (mut lag_ms_sum, mut lag_ms_max) = (0, 0);
            for m in &t.messages {
                let ms = (now - m.created_at).num_milliseconds().max(0);
                lag_ms_sum += ms;
                lag_ms_max = lag_ms_max.max(ms);
                if t.delivered_before.is_none_or(|end| m.offset > end) {
                    let after = std::time::Duration::from_millis(ms as u64);
                    self.runtime.activity.first_delivered(after);
                }
            }
            let tally = Tally {
                delivered: n,
                completed: if auto_ack { n } else { 0 },
                lag_ms_sum,
                lag_ms_max,
                ..Tally::default()
            };
            self.runtime.tallies.add(queues[t.queue].id(), tally);
        }
    }

    /// Records what the lease delivered, so its acks resolve without the transaction index.
    fn remember(&self, lease_id: Uuid, queues: &[Queue], taken: &[Taken]) {
        let lasts = taken
            .iter()
            .map(|t| queues[t.queue].options.lease_seconds())
            .max()
            .unwrap_or_default();
        self.runtime.deliveries.record(
            lease_id,
            Duration::from_secs(lasts.max(0) as u64),
            taken.iter().flat_map(|t| {
                t.messages.iter().map(|m| Delivered {
                    partition: t.partition_id,
                    transaction_id: &m.message.transaction_id,
                    offset: m.offset,
                })
            }),
        );
    }

    /// The delivered partitions, encrypted payloads opened. One that cannot be opened (the
    /// key changed) is delivered as its envelope, with a warning.
    fn opened(&self, queues: &[Queue], taken: Vec<Taken>) -> Vec<DeliveredPartition> {
        taken
            .into_iter()
            .map(|t| {
                let queue = queues[t.queue].name.clone();
                let messages = t
                    .messages
                    .into_iter()
                    .map(|mut m| {
                        self.open(&queue, &mut m.message);
                        m
                    })
                    .collect();
                DeliveredPartition {
                    queue,
                    partition_id: t.partition_id,
                    partition: t.partition,
                    messages,
                }
            })
            .collect()
    }

    /// [`settle`], and, after a walk over the group's cursors, where its next walk starts:
    /// just after the last partition this one served (`delivery::walk_end`).
    fn settle_walk(
        &self,
        q: &Queue,
        req: &PopRequest,
        asks: &[Ask],
        c: &Claim<'_>,
        claimed: claim::Claimed,
    ) -> Result<(Vec<Finish>, Vec<Vec<Taken>>), StoreError> {
        // A partition route's walk is over its one partition: it moves no queue-wide place.
        let walked = (claimed.walked && c.partition.is_none())
            .then(|| claimed.partitions.iter().map(|p| p.id).collect::<Vec<_>>());
        let (finishes, taken) = settle(q, req, asks, claimed)?;
        if let Some(claimed) = walked {
            let served: Vec<Uuid> = taken.iter().flatten().map(|t| t.partition_id).collect();
            if let Some(end) = delivery::walk_end(c.after, &served, &claimed) {
                self.runtime.ready.walked(q.id(), &req.group, end);
            }
        }
        Ok((finishes, taken))
    }
}

/// What the pops of a one-queue claim found.
fn found_in(q: Queue, taken: Vec<Vec<Taken>>) -> Vec<Found> {
    let queues: Arc<[Queue]> = Arc::new([q]);
    taken
        .into_iter()
        .map(|taken| Found {
            queues: queues.clone(),
            taken,
            reason: None,
        })
        .collect()
}

/// The claim of `q` for `asks`, the k-th partition under `leases[k]`.
fn claim_of<'a>(
    q: &Queue,
    req: &'a PopRequest,
    asks: &[Ask],
    leases: &'a [Uuid],
    plan: &'a Plan,
) -> Claim<'a> {
    Claim {
        queue_id: q.id(),
        leases,
        partition: req.target.partition_name(),
        group: &req.group,
        max_partitions: asks.iter().map(|a| a.budget.partitions).sum(),
        batch: asks.iter().map(|a| a.budget.batch).max().unwrap_or(0),
        lease_seconds: q.options.lease_seconds(),
        window_buffer_seconds: q.options.window_buffer_seconds(),
        hint: &plan.hint,
        after: plan.after,
    }
}

/// Shares what a claim took among its pops in order (`regent_rules::delivery`): the
/// finishes the claimed partitions need, and what each pop takes. The claim puts the k-th
/// partition under the lease of the pop that would be served it if every partition had
/// something to deliver (`slots`); where the sharing differs, the finish hands the partition
/// to its pop's lease (or releases it), so no pop's lease ever names another's partition.
fn settle(
    q: &Queue,
    req: &PopRequest,
    asks: &[Ask],
    mut claimed: claim::Claimed,
) -> Result<(Vec<Finish>, Vec<Vec<Taken>>), StoreError> {
    let delayed = q.options.delayed_processing_seconds();
    let cutoff = (delayed > 0).then(|| claimed.db_now - chrono::Duration::seconds(delayed));
    delivery::claim_order(&mut claimed.partitions, |p| (p.last_claim, p.id));
    let views: Vec<delivery::Claimed> = claimed.partitions.iter().map(view).collect();
    let budgets: Vec<delivery::Ask> = asks.iter().map(|a| a.budget).collect();
    let shares = delivery::assign(&views, &budgets, cutoff, req.auto_ack);
    let finishes: Vec<Finish> = claimed
        .partitions
        .iter()
        .zip(&shares)
        .filter_map(|(p, (owner, s))| {
            let handed = owner.map(|j| asks[j].lease_id).filter(|l| *l != p.lease_id);
            let undo = s.undoes_claim(&view(p)).then_some(p.last_claim);
            finish(p, s.finish, handed, undo)
        })
        .collect();
    let mut taken: Vec<Vec<Taken>> = asks.iter().map(|_| Vec::new()).collect();
    for (p, (owner, s)) in claimed.partitions.into_iter().zip(shares) {
        if let (Some(j), Some(upto)) = (owner, s.upto) {
            taken[j].push(read(p, upto)?);
        }
    }
    Ok((finishes, taken))
}

/// The store's form of a due sweep (never `Due::No`).
fn sweep_of(due: &Due) -> Sweep<'_> {
    match due {
        Due::Only(ids) => Sweep::Only(ids),
        _ => Sweep::All,
    }
}

/// Where new cursors of the request's group start.
fn start(req: &PopRequest) -> Start {
    if req.group == QUEUE_MODE {
        return Start::QueueMode;
    }
    Start::Named(match req.start {
        StartPoint::Beginning => None,
        StartPoint::After(t) => Some(t),
    })
}

fn view(p: &ClaimedPartition) -> delivery::Claimed {
    delivery::Claimed {
        committed: p.committed,
        lease_end: p.lease_end,
        old_end: p.old_end,
        last_claim: p.last_claim,
        tombstoned: p.tombstoned.clone(),
        segments: p
            .segments
            .iter()
            .map(|s| (s.base_offset, s.end_offset, s.created_at))
            .collect(),
    }
}

/// A claim's leases by partition slot: each pop's lease once per partition it may take, in
/// the order the pops are served.
fn slots(asks: &[Ask]) -> Vec<Uuid> {
    asks.iter()
        .flat_map(|a| std::iter::repeat_n(a.lease_id, a.budget.partitions.max(0) as usize))
        .collect()
}

/// The cursor update a claimed partition needs: its share's, and when it is handed to
/// another lease than the claim's, that too (even where the share needs none).
fn finish(
    p: &ClaimedPartition,
    f: Option<delivery::Finish>,
    handed: Option<Uuid>,
    undo: Option<Option<chrono::DateTime<chrono::Utc>>>,
) -> Option<Finish> {
    let f = match (f, handed) {
        (Some(f), _) => f,
        (None, Some(_)) => delivery::Finish {
            committed: p.committed,
            release: false,
            lease_end: p.lease_end,
        },
        (None, None) => return None,
    };
    Some(Finish {
        partition: p.id,
        committed: f.committed,
        release: f.release,
        lease_end: f.lease_end,
        lease: handed,
        undo,
        held: p.lease_id,
    })
}

/// The messages of a claimed partition after its cursor, up to `upto`, deleted ones left out.
fn read(p: ClaimedPartition, upto: i64) -> Result<Taken, StoreError> {
    let mut messages = Vec::with_capacity((upto - p.committed).max(0) as usize);
    'segments: for s in &p.segments {
        for (k, frame) in frames::split(s.frames()).enumerate() {
            let offset = s.base_offset + k as i64;
            if offset <= p.committed {
                continue;
            }
            if offset > upto {
                break 'segments;
            }
            if p.tombstoned.binary_search(&offset).is_ok() {
                continue;
            }
            messages.push(StoredMessage {
                offset,
                created_at: s.created_at,
                message: frames::decode(frame?)?,
            });
        }
    }
    Ok(Taken {
        delivered_before: p.old_end,
        queue: 0,
        partition_id: p.id,
        partition: p.name,
        messages,
    })
}

impl Found {
    fn none(queues: &Arc<[Queue]>) -> Found {
        Found {
            queues: queues.clone(),
            taken: Vec::new(),
            reason: None,
        }
    }

    /// Nothing was claimed.
    pub(super) fn is_empty(&self) -> bool {
        self.taken.is_empty()
    }
}

/// The empty answer for why nothing was claimed.
fn empty(reason: Option<EmptyReason>) -> Popped {
    match reason {
        None => Popped::Nothing("no_available_partition"),
        Some(EmptyReason::PartitionNotFound) => Popped::Nothing("partition_not_found"),
        Some(EmptyReason::LeaseHeld) => Popped::Nothing("lease_held"),
        Some(EmptyReason::WindowBufferActive { partition_id }) => Popped::Empty {
            partition_id: Some(partition_id),
            window_buffer: true,
        },
        Some(EmptyReason::NothingReadable) => Popped::Empty {
            partition_id: None,
            window_buffer: false,
        },
    }
}
