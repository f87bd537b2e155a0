//! Queen's ephemeral queues (`/api/v1/ephemeral/*`, spec §18.3): declare, reset, delete,
//! push, pop (long-polling), ack, and the listing and depth reads.
//!
//! The contents live in PostgreSQL's UNLOGGED tables (docs/design/ephemeral.md): shared by
//! every broker of the database, emptied by a crash, and each write of a queue is one
//! transaction holding the queue's live row. A push or pop that names an unknown queue
//! creates it (a new incarnation, with the defaults or its declared options). Message ids
//! name the incarnation, so an ack that outlived it is answered `stale`. Wakeups follow the
//! durable pop's: a parked pop is woken after a push's commit, here and through the peer
//! link on the other brokers, and rechecks on a timer, so a lost wakeup costs latency.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use regent_rules::ephemeral::{
    admit, message_id, parse_id, plan_acks, redeliver, AckStatus, Admit, Declared, Held, Options,
    Outcome, Policy, MAX_GROUPS_PER_QUEUE, MAX_QUEUES_PER_TENANT,
};
use regent_rules::naming::{DEFAULT_PARTITION, QUEUE_MODE};
pub use regent_memory::ephemeral::EphemeralTotal;
use regent_memory::Announcement;
use regent_store::ephemeral::{self as store, EphemeralRow, Handed, Live, StoredOptions};
pub use regent_store::ephemeral::{GroupDepth, PartitionDepth};
use regent_store::{commit_if, StoreError, Tx};

use crate::pop::FIRST_RECHECK;
use crate::{Error, Service};

/// A pop's answer is sent this long before the client's `timeout`, so it arrives first.
const DEADLINE_MARGIN: Duration = Duration::from_millis(50);

/// Why a write was refused; nothing was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Over the queue's `maxLength`/`maxBytes` with policy `reject`.
    QueueFull,
    /// The push alone is over a bound of the queue: the text says which.
    TooLarge(String),
    /// The tenant has [`MAX_QUEUES_PER_TENANT`] queues and this would be another.
    QueueLimit,
}

/// A push: messages as the client's JSON texts, to one partition (`Default` when unnamed).
pub struct Push<'a> {
    pub queue: &'a str,
    pub partition: Option<&'a str>,
    pub payloads: Vec<&'a str>,
}

/// A pop as asked.
#[derive(Clone, Debug)]
pub struct Pop {
    pub queue: String,
    pub partition: Option<String>,
    /// `None`: queue mode (one shared cursor).
    pub group: Option<String>,
    pub batch: i64,
    pub wait: bool,
    pub timeout: Duration,
    /// Done at delivery: no lease, nothing to ack (at most once).
    pub auto_ack: bool,
}

/// A message handed to a pop.
#[derive(Clone, Debug)]
pub struct EphemeralMessage {
    pub id: String,
    pub partition: String,
    /// The client's JSON text.
    pub payload: String,
    /// Deliveries of the message to the group, this one included.
    pub attempts: i32,
}

/// One queue of the listing: declared (with its options) or only live.
#[derive(Clone, Debug)]
pub struct EphemeralQueue {
    pub name: String,
    pub declared: bool,
    /// The options in force.
    pub options: Options,
    pub messages: i64,
    pub bytes: i64,
    pub partitions: i64,
    pub groups: i64,
    pub dropped_bounds: i64,
    pub dropped_ttl: i64,
    pub dropped_retry: i64,
}

/// One queue's depth: its listing row, its partitions and its groups.
#[derive(Clone, Debug)]
pub struct EphemeralDepth {
    pub queue: EphemeralQueue,
    /// What is left to deliver: the worst named group's backlog, else queue mode's, else
    /// every message held (no one has popped).
    pub pending: i64,
    pub partitions: Vec<PartitionDepth>,
    pub groups: Vec<GroupDepth>,
}

impl Service {
    /// Declares `queue` with `options` (replacing an earlier declaration); the options in
    /// force.
    pub async fn ephemeral_configure(
        &self,
        tenant: &str,
        queue: &str,
        options: &Declared,
    ) -> Result<Result<Options, Refused>, Error> {
        let stored = stored(options);
        Ok(commit_if!(self.store, |tx| {
            if store::find(tx, tenant, queue).await?.is_none() && at_queue_limit(tx, tenant).await?
            {
                return Ok(Err(Refused::QueueLimit));
            }
            store::declare(tx, tenant, queue, &stored).await?;
            Ok(Ok(options.resolve()))
        })?)
    }

    /// Empties `queue` (its declaration and groups stay); the messages dropped.
    pub async fn ephemeral_reset(&self, tenant: &str, queue: &str) -> Result<i64, Error> {
        let dropped = commit_if!(self.store, |tx| {
            Ok(Ok::<_, ()>(match store::lock(tx, tenant, queue).await? {
                Some(_) => store::reset(tx, tenant, queue).await?,
                None => 0,
            }))
        })?;
        Ok(dropped.unwrap_or_default())
    }

    /// Deletes `queue`: its declaration and contents. Whether there was one.
    pub async fn ephemeral_delete(&self, tenant: &str, queue: &str) -> Result<bool, Error> {
        let deleted = commit_if!(self.store, |tx| {
            store::lock(tx, tenant, queue).await?;
            Ok(Ok::<_, ()>(store::delete(tx, tenant, queue).await?))
        })?;
        Ok(deleted.unwrap_or_default())
    }

    /// Pushes every message or none; how many.
    pub async fn ephemeral_push(
        &self,
        tenant: &str,
        p: &Push<'_>,
    ) -> Result<Result<usize, Refused>, Error> {
        if p.payloads.is_empty() {
            return Ok(Ok(0));
        }
        let partition = p.partition.unwrap_or(DEFAULT_PARTITION);
        let bytes: i64 = p.payloads.iter().map(|m| m.len() as i64).sum();
        let out = commit_if!(self.store, |tx| {
            let Some((live, options, mut dropped)) = open(tx, tenant, p.queue).await? else {
                return Ok(Err(Refused::QueueLimit));
            };
            let n = p.payloads.len() as i64;
            let held = (live.length - dropped.ttl, live.bytes - dropped.ttl_bytes);
            match admit(held.0, held.1, n, bytes, &options) {
                Admit::Fits => {}
                Admit::Full => return Ok(Err(Refused::QueueFull)),
                Admit::TooLarge(why) => return Ok(Err(Refused::TooLarge(why))),
                Admit::DropOldest { count, bytes } => {
                    dropped.bounds = store::drop_oldest(tx, tenant, p.queue, count, bytes)
                        .await?
                        .count;
                }
            }
            store::append(tx, tenant, p.queue, partition, live.next_seq, &p.payloads).await?;
            Ok(Ok(dropped))
        })?;
        let dropped = match out {
            Ok(d) => d,
            Err(refused) => return Ok(Err(refused)),
        };
        let n = p.payloads.len();
        self.count_ephemeral(tenant, |t| {
            t.pushed += n as u64;
            t.dropped_bounds += dropped.bounds as u64;
            t.dropped_ttl += dropped.ttl as u64;
        });
        self.announce(&Announcement::ephemeral(tenant, p.queue, "", n));
        Ok(Ok(n))
    }

    /// One pop: attempts until something is handed, or (with `wait`) until the deadline or
    /// a shutdown. An empty answer is an empty list.
    pub async fn ephemeral_pop(
        self: &Arc<Self>,
        tenant: &str,
        req: &Pop,
    ) -> Result<Result<Vec<EphemeralMessage>, Refused>, Error> {
        let deadline = Instant::now() + req.timeout.saturating_sub(DEADLINE_MARGIN);
        let group = req.group.as_deref().unwrap_or(QUEUE_MODE);
        let waiter = self
            .runtime
            .ephemeral_wakeups
            .for_group(tenant, &req.queue, group);
        let mut stopping = self.stopping.subscribe();
        let mut recheck = FIRST_RECHECK;
        loop {
            // Registered before the attempt, so a push that commits during it still wakes us.
            let notified = waiter.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let handed = self.ephemeral_attempt(tenant, group, req).await?;
            if !matches!(&handed, Ok(m) if m.is_empty()) || !req.wait {
                return Ok(handed);
            }
            let now = Instant::now();
            if now >= deadline || *stopping.borrow() {
                return Ok(Ok(Vec::new()));
            }
            self.pause(
                notified.as_mut(),
                &mut recheck,
                deadline - now,
                &mut stopping,
            )
            .await;
            if Instant::now() >= deadline {
                return Ok(Ok(Vec::new()));
            }
        }
    }

    /// One pop's transaction: due deliveries first (they are older), then what the group has
    /// not been handed; leased, or done at once for `autoAck`.
    async fn ephemeral_attempt(
        &self,
        tenant: &str,
        group: &str,
        req: &Pop,
    ) -> Result<Result<Vec<EphemeralMessage>, Refused>, Error> {
        let queue = req.queue.as_str();
        let partition = req.partition.as_deref();
        let out = commit_if!(self.store, |tx| {
            let Some((live, o, dropped)) = open(tx, tenant, queue).await? else {
                return Ok(Err(Refused::QueueLimit));
            };
            store::remember_group(tx, tenant, queue, group, MAX_GROUPS_PER_QUEUE).await?;
            let due = store::due(tx, tenant, queue, group, partition, req.batch).await?;
            let (mut handed, spent): (Vec<Handed>, Vec<Handed>) = due
                .into_iter()
                .partition(|h| redeliver(h.attempts, o.retry_limit));
            let more = req.batch - handed.len() as i64;
            handed.extend(store::take(tx, tenant, queue, group, partition, more).await?);
            let given: Vec<(i64, &str, i32)> = handed
                .iter()
                .map(|h| (h.seq, h.partition.as_str(), h.attempts + 1))
                .collect();
            let gone: Vec<i64> = spent.iter().map(|h| h.seq).collect();
            let mut done = gone.clone();
            if req.auto_ack {
                done.extend(handed.iter().filter(|h| h.attempts > 0).map(|h| h.seq));
            } else {
                store::lease(tx, tenant, queue, group, &given, o.lease_seconds).await?;
            }
            let spent = gone.len() as i64;
            if !done.is_empty() {
                store::settle(tx, tenant, queue, group, &done, &[], spent).await?;
            }
            if req.auto_ack || spent > 0 {
                store::trim(tx, tenant, queue).await?;
            }
            let messages = handed
                .into_iter()
                .map(|h| EphemeralMessage {
                    id: message_id(live.epoch, &h.partition, h.seq),
                    partition: h.partition,
                    payload: h.payload,
                    attempts: h.attempts + 1,
                })
                .collect::<Vec<_>>();
            Ok(Ok((messages, dropped, spent)))
        })?;
        let (messages, dropped, spent) = match out {
            Ok(done) => done,
            Err(refused) => return Ok(Err(refused)),
        };
        self.count_ephemeral(tenant, |t| {
            t.popped += messages.len() as u64;
            t.dropped_ttl += dropped.ttl as u64;
            t.dropped_retry += spent as u64;
        });
        Ok(Ok(messages))
    }

    /// Acks of one group: each id's outcome, in order.
    pub async fn ephemeral_ack(
        &self,
        tenant: &str,
        queue: &str,
        group: Option<&str>,
        acks: &[(&str, AckStatus)],
    ) -> Result<Vec<Outcome>, Error> {
        let group = group.unwrap_or(QUEUE_MODE);
        let plan = commit_if!(self.store, |tx| {
            let Some(live) = store::lock(tx, tenant, queue).await? else {
                return Ok(Ok(plan_acks(acks, None, &HashMap::new(), 0)));
            };
            let o = resolve(store::declared(tx, tenant, queue).await?);
            let seqs: Vec<i64> = acks
                .iter()
                .filter_map(|(id, _)| parse_id(id))
                .filter(|(epoch, _, _)| *epoch == live.epoch)
                .map(|(_, _, seq)| seq)
                .collect();
            let held: HashMap<i64, Held> = store::held(tx, tenant, queue, group, &seqs)
                .await?
                .into_iter()
                .map(|(seq, partition, attempts)| {
                    (
                        seq,
                        Held {
                            partition,
                            attempts,
                        },
                    )
                })
                .collect();
            let plan = plan_acks(acks, Some(live.epoch), &held, o.retry_limit);
            store::settle(
                tx,
                tenant,
                queue,
                group,
                &plan.done,
                &plan.again,
                plan.dropped,
            )
            .await?;
            if !plan.done.is_empty() {
                store::trim(tx, tenant, queue).await?;
            }
            Ok(Ok::<_, ()>(plan))
        })?
        .unwrap_or_default();
        let acked = plan.done.len() as u64 - plan.dropped as u64;
        self.count_ephemeral(tenant, |t| {
            t.acked += acked;
            t.dropped_retry += plan.dropped as u64;
        });
        if !plan.again.is_empty() {
            self.announce(&Announcement::ephemeral(tenant, queue, group, 1));
        }
        Ok(plan.outcomes)
    }

    /// The tenant's queues, declared or live, by name.
    pub async fn ephemeral_queues(&self, tenant: &str) -> Result<Vec<EphemeralQueue>, Error> {
        let client = self.store.client().await?;
        Ok(store::list(&client, tenant)
            .await?
            .into_iter()
            .map(listed)
            .collect())
    }

    /// The queue's depth; `None` when the tenant has no such queue (declared or live).
    /// Messages past their `ttlSeconds` are dropped first.
    pub async fn ephemeral_depth(
        &self,
        tenant: &str,
        queue: &str,
    ) -> Result<Option<EphemeralDepth>, Error> {
        let found = commit_if!(self.store, |tx| {
            let ttl = match store::lock(tx, tenant, queue).await? {
                Some(_) => {
                    let o = resolve(store::declared(tx, tenant, queue).await?);
                    expire(tx, tenant, queue, &o).await?
                }
                None => Dropped::default(),
            };
            let Some(row) = store::find(tx, tenant, queue).await? else {
                return Ok(Ok::<_, ()>(None));
            };
            let (partitions, groups) = store::depth(tx, tenant, queue).await?;
            Ok(Ok(Some((row, partitions, groups, ttl))))
        })?
        .unwrap_or_default();
        let Some((row, partitions, groups, ttl)) = found else {
            return Ok(None);
        };
        self.count_ephemeral(tenant, |t| t.dropped_ttl += ttl.ttl as u64);
        let queue = listed(row);
        Ok(Some(EphemeralDepth {
            pending: pending(&groups, queue.messages),
            queue,
            partitions,
            groups,
        }))
    }

    /// What each tenant's ephemeral queues did on this broker since start.
    pub fn ephemeral_totals(&self) -> Vec<(String, EphemeralTotal)> {
        self.runtime.ephemeral.all()
    }

    /// Per tenant: its live queues and the messages and bytes they hold.
    pub async fn ephemeral_held(&self) -> Result<Vec<(String, i64, i64, i64)>, Error> {
        let client = self.store.client().await?;
        Ok(store::totals(&client).await?)
    }

    fn count_ephemeral(&self, tenant: &str, f: impl FnOnce(&mut EphemeralTotal)) {
        self.runtime.ephemeral.count(tenant, f);
    }
}

/// What a transaction dropped before its work: by ttl (messages, bytes), by bounds.
#[derive(Clone, Copy, Debug, Default)]
struct Dropped {
    ttl: i64,
    ttl_bytes: i64,
    bounds: i64,
}

/// The queue's live row, locked (created when missing, unless the tenant is at its queue
/// limit: `None`), its options in force, and what its ttl dropped.
async fn open(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
) -> Result<Option<(Live, Options, Dropped)>, StoreError> {
    let declared = store::declared(tx, tenant, queue).await?;
    let live = match store::lock(tx, tenant, queue).await? {
        Some(live) => live,
        None if declared.is_none() && at_queue_limit(tx, tenant).await? => return Ok(None),
        None => store::create(tx, tenant, queue).await?,
    };
    let o = resolve(declared);
    let dropped = expire(tx, tenant, queue, &o).await?;
    Ok(Some((live, o, dropped)))
}

async fn expire(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    o: &Options,
) -> Result<Dropped, StoreError> {
    if o.ttl_seconds == 0 {
        return Ok(Dropped::default());
    }
    let gone = store::expire(tx, tenant, queue, o.ttl_seconds).await?;
    Ok(Dropped {
        ttl: gone.count,
        ttl_bytes: gone.bytes,
        bounds: 0,
    })
}

async fn at_queue_limit(tx: &Tx<'_>, tenant: &str) -> Result<bool, StoreError> {
    Ok(store::queue_count(tx, tenant).await? >= MAX_QUEUES_PER_TENANT)
}

/// The options in force of a queue declared with `stored` (`None`: not declared).
fn resolve(stored: Option<StoredOptions>) -> Options {
    declared(&stored.unwrap_or_default()).resolve()
}

fn declared(s: &StoredOptions) -> Declared {
    Declared {
        max_bytes: s.max_bytes,
        max_length: s.max_length,
        // Only a policy the broker read is ever stored.
        policy: s.policy.as_deref().and_then(Policy::parse),
        ttl_seconds: s.ttl_seconds,
        lease_seconds: s.lease_seconds,
        retry_limit: s.retry_limit,
        window_ms: s.window_ms,
        window_count: s.window_count,
    }
}

fn stored(d: &Declared) -> StoredOptions {
    StoredOptions {
        max_bytes: d.max_bytes,
        max_length: d.max_length,
        policy: d.policy.map(|p| p.as_str().to_string()),
        ttl_seconds: d.ttl_seconds,
        lease_seconds: d.lease_seconds,
        retry_limit: d.retry_limit,
        window_ms: d.window_ms,
        window_count: d.window_count,
    }
}

fn listed(r: EphemeralRow) -> EphemeralQueue {
    EphemeralQueue {
        declared: r.declared.is_some(),
        options: resolve(r.declared),
        name: r.name,
        messages: r.length,
        bytes: r.bytes,
        partitions: r.partitions,
        groups: r.groups,
        dropped_bounds: r.dropped_bounds,
        dropped_ttl: r.dropped_ttl,
        dropped_retry: r.dropped_retry,
    }
}

/// A depth read's `pending` (Queen's precedence): the worst named group's backlog, else
/// queue mode's, else every message held.
fn pending(groups: &[GroupDepth], held: i64) -> i64 {
    let backlog = |g: &GroupDepth| g.fresh + g.due;
    groups
        .iter()
        .filter(|g| g.group != QUEUE_MODE)
        .map(backlog)
        .max()
        .or_else(|| groups.iter().find(|g| g.group == QUEUE_MODE).map(backlog))
        .unwrap_or(held)
}
