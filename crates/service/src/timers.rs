//! Queen's timers (`/api/v1/timers`, spec §18.2): messages scheduled under a key, and the
//! firing loop that pushes each one to its queue once its deadline has passed.
//!
//! A schedule (or reschedule: the same upsert) stores the timer with the message id and txn
//! its answer promises; a cancel deletes it. Neither ever waits for a fire: a timer a fire
//! holds answers `too_late` (`regent_rules::timers`).
//!
//! Each broker runs the firing loop. It sleeps until the nearest deadline (at most
//! [`MAX_SLEEP`]; a schedule committed here with an earlier deadline wakes it at once), then
//! fires per queue in transactions that take the due rows (`FOR UPDATE SKIP LOCKED`, so two
//! brokers never take the same row), push their messages through the push path (dedup,
//! partitions created on first push, encryption, maintenance buffering) and delete the rows,
//! all committed together: a timer's message is pushed exactly once, and its txn is the
//! push's dedup key as a backstop. (docs/design/timers.md.)

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use regent_rules::timers::TimerStatus;
use regent_rules::timers::{self as rules, Found};
pub use regent_memory::timers::{TimerTotal, LATENESS_BUCKETS_MS};
use regent_memory::Announcement;
use regent_store::append::Dedup;
use regent_store::timers::{self as store, Claim, NewTimer};
pub use regent_store::timers::{QueueTimers, StoredTimer};
use regent_store::{commit_if, in_transaction, maintenance, StoreError, Tx};

use crate::push::{append, hold, prepare, PushItem, Verdict};
use crate::{Error, Message, Service};

/// The longest the firing loop sleeps: how soon a timer scheduled through another broker (or
/// left by one that stopped) fires at the latest, without a wake-up.
pub const MAX_SLEEP: Duration = Duration::from_secs(1);
/// The longest the loop sleeps when no timer is pending at all: a schedule committed here
/// wakes it at once, so this only bounds how soon a timer scheduled through another broker
/// that then stopped is found. Each look is a scan of every shard on Citus, so an idle fleet
/// should not look every second.
pub const IDLE_SLEEP: Duration = Duration::from_secs(5);
/// Timers one fire takes of one queue: short transactions, each bounded.
const BATCH: i64 = 500;
/// The pause when every due timer is held by another broker's fire.
const BUSY_PAUSE: Duration = Duration::from_millis(20);
/// The pause after the database failed the loop.
const ERROR_PAUSE: Duration = Duration::from_secs(1);

/// A schedule (or reschedule) of one timer.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub queue: String,
    pub key: String,
    /// The client's (the Python client mints one); the message's transaction id.
    pub txn: String,
    pub partition: String,
    /// The message's JSON text.
    pub payload: String,
    /// The token's `sub`, the message's `producerSub`.
    pub producer_sub: Option<String>,
    /// From now (the database's clock); negative fires at once.
    pub delay_ms: i64,
}

/// A cancel of one timer; with `txn`, only the timer scheduled under it.
#[derive(Clone, Debug)]
pub struct Cancel {
    pub queue: String,
    pub key: String,
    pub txn: Option<String>,
}

/// One timer operation, as `POST /api/v1/timers` and the transaction route carry them.
#[derive(Clone, Debug)]
pub enum TimerOp {
    Schedule(Schedule),
    Cancel(Cancel),
}

impl TimerOp {
    fn queue(&self) -> &str {
        match self {
            TimerOp::Schedule(s) => &s.queue,
            TimerOp::Cancel(c) => &c.queue,
        }
    }

    fn key(&self) -> &str {
        match self {
            TimerOp::Schedule(s) => &s.key,
            TimerOp::Cancel(c) => &c.key,
        }
    }
}

/// What one timer operation did.
#[derive(Clone, Debug)]
pub struct TimerOutcome {
    pub status: TimerStatus,
    pub queue: String,
    pub key: String,
    /// The timer's (the sent one for a schedule, the pending one's otherwise; a cancel's own
    /// on `absent`, so the client can look for it in the queue).
    pub txn: Option<String>,
    pub message_id: Option<Uuid>,
    pub deliver_at: Option<DateTime<Utc>>,
}

impl TimerOutcome {
    fn of(op: &TimerOp, status: TimerStatus) -> TimerOutcome {
        TimerOutcome {
            status,
            queue: op.queue().to_string(),
            key: op.key().to_string(),
            txn: None,
            message_id: None,
            deliver_at: None,
        }
    }

    fn pending(mut self, p: store::Pending) -> TimerOutcome {
        self.txn = Some(p.txn);
        self.message_id = Some(p.message_id);
        self.deliver_at = Some(p.deliver_at);
        self
    }
}

/// The timer operations inside the caller's transaction, in order; one outcome each. Shared
/// by `POST /api/v1/timers`, its cancel route and the transaction route. After the commit,
/// the caller calls [`Service::timers_committed`].
pub(crate) async fn apply_timer_ops(
    tx: &Tx<'_>,
    tenant: &str,
    ops: &[TimerOp],
) -> Result<Vec<TimerOutcome>, StoreError> {
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<(&str, &str)> = ops.iter().map(|op| (op.queue(), op.key())).collect();
    store::take_turns(tx, tenant, &keys).await?;
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        out.push(match op {
            TimerOp::Schedule(s) => schedule(tx, tenant, op, s).await?,
            TimerOp::Cancel(c) => cancel(tx, tenant, op, c).await?,
        });
    }
    Ok(out)
}

async fn schedule(
    tx: &Tx<'_>,
    tenant: &str,
    op: &TimerOp,
    s: &Schedule,
) -> Result<TimerOutcome, StoreError> {
    let (found, pending) = found(store::claim(tx, tenant, &s.queue, &s.key, None).await?);
    let status = rules::schedule(found);
    let out = TimerOutcome::of(op, status);
    if !status.ok() {
        return Ok(pending.map_or(out.clone(), |p| out.pending(p)));
    }
    let message_id = Uuid::now_v7();
    let t = NewTimer {
        tenant,
        queue: &s.queue,
        key: &s.key,
        txn: &s.txn,
        message_id,
        partition: &s.partition,
        payload: &s.payload,
        producer_sub: s.producer_sub.as_deref(),
        delay_ms: s.delay_ms,
    };
    let deliver_at = store::upsert(tx, &t).await?;
    Ok(out.pending(store::Pending {
        txn: s.txn.clone(),
        message_id,
        deliver_at,
    }))
}

async fn cancel(
    tx: &Tx<'_>,
    tenant: &str,
    op: &TimerOp,
    c: &Cancel,
) -> Result<TimerOutcome, StoreError> {
    let claim = store::claim(tx, tenant, &c.queue, &c.key, c.txn.as_deref()).await?;
    let (found, pending) = found(claim);
    let status = rules::cancel(found);
    if status == TimerStatus::Cancelled {
        store::delete(tx, tenant, &c.queue, &c.key).await?;
    }
    let out = TimerOutcome::of(op, status);
    Ok(match pending {
        Some(p) => out.pending(p),
        None => TimerOutcome {
            txn: c.txn.clone(),
            ..out
        },
    })
}

fn found(c: Claim) -> (Found, Option<store::Pending>) {
    match c {
        Claim::Absent => (Found::Nothing, None),
        Claim::Mine(p) => (Found::Held, Some(p)),
        Claim::Locked(p) => (Found::Firing, Some(p)),
    }
}

impl Service {
    /// Applies timer operations in one transaction (`POST /api/v1/timers`). Counted against
    /// the tenant's stored-message cap as a push of its schedules would be: over the cap,
    /// refused whole.
    pub async fn timers(
        &self,
        tenant: &Arc<str>,
        ops: Vec<TimerOp>,
    ) -> Result<Vec<TimerOutcome>, Error> {
        let schedules = ops
            .iter()
            .filter(|o| matches!(o, TimerOp::Schedule(_)))
            .count();
        // A check, not an account: a timer stores no message until it fires, and what it
        // stores then is counted at the account's next read of the log.
        self.reserve(tenant, schedules as i64).await?.released();
        let out = in_transaction!(self.store, |tx| { apply_timer_ops(tx, tenant, &ops).await })?;
        self.timers_committed(tenant, &ops, &out);
        Ok(out)
    }

    /// Cancels one timer (`DELETE /api/v1/timers/:queue/*timerKey`): no limit of the tenant's
    /// applies, so a timer can always be stopped.
    pub async fn cancel_timer(&self, tenant: &str, c: Cancel) -> Result<TimerOutcome, Error> {
        let ops = [TimerOp::Cancel(c)];
        let mut out =
            in_transaction!(self.store, |tx| { apply_timer_ops(tx, tenant, &ops).await })?;
        self.timers_committed(tenant, &ops, &out);
        Ok(out.remove(0))
    }

    /// After the commit of timer operations: the counters, and the firing loop woken for a
    /// deadline nearer than it sleeps to.
    pub(crate) fn timers_committed(&self, tenant: &str, ops: &[TimerOp], out: &[TimerOutcome]) {
        for (op, o) in ops.iter().zip(out) {
            if let (TimerOp::Schedule(s), true) = (op, o.status.ok()) {
                let ms = s.delay_ms.max(0) as u64;
                self.runtime.timers.scheduled_in(Duration::from_millis(ms));
            }
            self.runtime.timers.count(tenant, |t| match o.status {
                TimerStatus::Scheduled => t.scheduled += 1,
                TimerStatus::Rescheduled => t.rescheduled += 1,
                TimerStatus::Cancelled => t.cancelled += 1,
                TimerStatus::TooLate => t.too_late += 1,
                TimerStatus::Absent => {}
            });
        }
    }

    /// The tenant's pending timer of (`queue`, `key`).
    pub async fn peek_timer(
        &self,
        tenant: &str,
        queue: &str,
        key: &str,
    ) -> Result<Option<StoredTimer>, Error> {
        let client = self.store.client().await?;
        Ok(store::peek(&client, tenant, queue, key).await?)
    }

    /// Up to `limit` of the tenant's pending timers of `queue` by key, after `after`
    /// (exclusive), and whether more follow.
    pub async fn list_timers(
        &self,
        tenant: &str,
        queue: &str,
        after: Option<&str>,
        limit: i64,
    ) -> Result<(Vec<StoredTimer>, bool), Error> {
        let client = self.store.client().await?;
        let mut rows = store::list(&client, tenant, queue, after, limit + 1).await?;
        let truncated = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        Ok((rows, truncated))
    }

    /// The tenant's queues with pending timers: how many, and the nearest deadline.
    pub async fn timer_queues(&self, tenant: &str) -> Result<Vec<QueueTimers>, Error> {
        let client = self.store.client().await?;
        Ok(store::by_queue(&client, tenant).await?)
    }

    /// What this broker's timer operations and fires did since start, per tenant.
    pub fn timer_totals(&self) -> Vec<(String, TimerTotal)> {
        self.runtime.timers.all()
    }
}

/// The firing loop (see the module's note).
pub(crate) async fn run(s: Arc<Service>) {
    loop {
        let sleep = match s.fire_due().await {
            Ok(sleep) => sleep,
            Err(e) => {
                tracing::warn!(error = %e, "timers: the firing loop failed; trying again");
                ERROR_PAUSE
            }
        };
        let at = tokio::time::Instant::now() + sleep;
        s.runtime.timers.sleep_until(at).await;
    }
}

/// A fire of one queue's due timers, committed.
struct Fired {
    taken: Vec<StoredTimer>,
    verdicts: Vec<Verdict>,
    written: Announcement,
    held: bool,
}

impl Service {
    /// Fires every due timer; how long to sleep until the next deadline.
    async fn fire_due(&self) -> Result<Duration, Error> {
        loop {
            let client = self.store.client().await?;
            let (queues, at) = store::due(&client, BATCH).await?;
            drop(client);
            let Some(at) = at else { break };
            let read = SystemTime::now();
            let mut progress = 0;
            for (tenant, queue) in &queues {
                progress += self.fire_queue(tenant, queue, at, read).await?;
            }
            if progress == 0 {
                return Ok(BUSY_PAUSE);
            }
        }
        let client = self.store.client().await?;
        Ok(match store::nearest(&client).await? {
            None => IDLE_SLEEP,
            Some(ms) => Duration::from_secs_f64(ms.max(0.0) / 1000.0).min(MAX_SLEEP),
        })
    }

    /// One transaction firing up to [`BATCH`] of `queue`'s timers due by `at` (the database's
    /// clock, read at `read` by this one's); how many it fired or put off.
    async fn fire_queue(
        &self,
        tenant: &str,
        queue: &str,
        at: DateTime<Utc>,
        read: SystemTime,
    ) -> Result<usize, Error> {
        let run = commit_if!(self.store, |tx| { self.fire(tx, tenant, queue, at).await })?;
        let fired = match run {
            Ok(Some(fired)) => fired,
            Ok(None) => return Ok(0),
            Err(failed) => return self.put_off(tenant, queue, failed, at).await,
        };
        let since_read = read.elapsed().unwrap_or_default().as_secs_f64() * 1000.0;
        let lateness: Vec<f64> = fired
            .taken
            .iter()
            .map(|t| (at - t.deliver_at).num_microseconds().unwrap_or(0) as f64 / 1000.0)
            .map(|ms| ms + since_read)
            .collect();
        self.count_outcomes(&fired.verdicts);
        self.tally_pushed(&fired.written, &fired.verdicts);
        if !fired.held {
            self.announce(&fired.written);
        }
        self.runtime.timers.fired(tenant, &lateness);
        Ok(fired.taken.len())
    }

    /// The fire's transaction: the due rows taken and deleted, their messages pushed. `Err`
    /// names the timers whose message the push refused (rolled back: nothing fired).
    async fn fire(
        &self,
        tx: &Tx<'_>,
        tenant: &str,
        queue: &str,
        at: DateTime<Utc>,
    ) -> Result<Result<Option<Fired>, Vec<(String, i32)>>, StoreError> {
        let taken = store::take(tx, tenant, queue, at, BATCH).await?;
        if taken.is_empty() {
            return Ok(Ok(None));
        }
        let items: Vec<PushItem> = taken.iter().map(item).collect();
        // The drain lock (shared) first, then partition creation: the global lock order.
        let buffering = self.runtime.switches.buffering(tenant)
            && maintenance::still_buffering(tx, tenant).await?;
        let prepared = prepare(tx, self, tenant, &items).await?;
        let verdicts = if buffering {
            hold(tx, tenant, &prepared).await?
        } else {
            append(tx, &prepared, Dedup::Careful).await?
        };
        let failed: Vec<(String, i32)> = taken
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| matches!(v, Verdict::Failed { .. }))
            .map(|(t, _)| (t.key.clone(), t.attempts))
            .collect();
        if !failed.is_empty() {
            for (t, v) in taken.iter().zip(&verdicts) {
                if let Verdict::Failed { error } = v {
                    tracing::warn!(tenant, queue, key = %t.key, %error, "timers: a fire was refused; put off");
                }
            }
            return Ok(Err(failed));
        }
        Ok(Ok(Some(Fired {
            written: prepared.written(tenant),
            taken,
            verdicts,
            held: buffering,
        })))
    }

    /// Puts off the timers whose fire was refused, each by its backoff from `at` (the
    /// database's clock); the others fire on the loop's next pass.
    async fn put_off(
        &self,
        tenant: &str,
        queue: &str,
        failed: Vec<(String, i32)>,
        at: DateTime<Utc>,
    ) -> Result<usize, Error> {
        let keys: Vec<&str> = failed.iter().map(|(k, _)| k.as_str()).collect();
        let until: Vec<DateTime<Utc>> = failed
            .iter()
            .map(|(_, a)| {
                let ms = rules::retry_delay_ms(*a) as i64;
                at + chrono::Duration::milliseconds(ms)
            })
            .collect();
        in_transaction!(self.store, |tx| {
            store::postpone(tx, tenant, queue, &keys, &until, at).await
        })?;
        Ok(failed.len())
    }
}

/// The message a timer becomes: the promised id, its txn as the transaction id.
fn item(t: &StoredTimer) -> PushItem {
    PushItem {
        queue: t.queue.clone(),
        partition: t.partition.clone(),
        message: Message {
            message_id: t.message_id,
            transaction_id: t.txn.clone(),
            trace_id: None,
            producer_sub: t.producer_sub.clone(),
            encrypted: false,
            payload: t.payload.clone(),
        },
    }
}
