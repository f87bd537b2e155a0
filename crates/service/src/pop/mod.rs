//! Pop: claim partitions for a consumer group under one lease and read their messages,
//! long-polling when asked to. The loop registers for wakeups before each attempt, so a push
//! that commits during it still wakes it, and rechecks on a timer (100 ms doubling to 1 s),
//! so a lost wakeup costs latency, never a message.

mod attempt;
mod lane;

pub(crate) use lane::{LaneJob, LaneKey};

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use regent_rules::subscription::StartPoint;
use regent_memory::{Op, Recheck};

use crate::{Error, Handover, Service, StoredMessage};

/// An answer is sent this long before the client's `timeout`, so it always arrives first.
const DEADLINE_MARGIN: Duration = Duration::from_millis(50);
/// A parked pop rechecks this soon after parking, then doubling up to [`MAX_RECHECK`]: what
/// a lost wakeup (or a lease expiring, which nothing announces) costs at most.
pub(crate) const FIRST_RECHECK: Duration = Duration::from_millis(100);
const MAX_RECHECK: Duration = Duration::from_secs(1);

/// What a pop may claim from.
#[derive(Clone, Debug)]
pub enum Target {
    /// Any partition of one queue.
    Queue(String),
    /// One named partition of one queue.
    Partition(String, String),
    /// Any partition of any queue in a namespace and/or task, highest priority first.
    Scope {
        namespace: Option<String>,
        task: Option<String>,
    },
}

impl Target {
    pub fn queue_name(&self) -> &str {
        match self {
            Target::Queue(q) | Target::Partition(q, _) => q,
            Target::Scope { .. } => "",
        }
    }

    pub fn partition_name(&self) -> Option<&str> {
        match self {
            Target::Partition(_, p) => Some(p),
            _ => None,
        }
    }
}

/// A pop as asked, every default applied.
#[derive(Clone, Debug)]
pub struct PopRequest {
    pub target: Target,
    /// Messages in the whole answer.
    pub batch: i64,
    /// Partitions the answer may span.
    pub partitions: i64,
    pub wait: bool,
    pub timeout: Duration,
    pub group: String,
    /// Commit at delivery: no lease.
    pub auto_ack: bool,
    /// Where a named group starts on first join.
    pub start: StartPoint,
}

/// What a pop found.
pub enum Popped {
    Delivered(Delivery),
    /// Nothing to claim, with Queen's error code (only without `wait`).
    Nothing(&'static str),
    /// A success without messages (only without `wait`): the partition is in its window
    /// buffer (with its id), or nothing in it is readable yet.
    Empty {
        partition_id: Option<Uuid>,
        window_buffer: bool,
    },
    /// The long-poll ended empty: its deadline passed, or the broker is shutting down.
    TimedOut,
    /// Pop maintenance is on for the tenant: nothing is claimed.
    Paused,
}

/// Messages delivered under one lease.
pub struct Delivery {
    /// `None` for an auto-acked pop.
    pub lease_id: Option<Uuid>,
    pub partitions: Vec<DeliveredPartition>,
    /// The lease on its way to the client; `None` for an auto-acked pop.
    pub handover: Option<Handover>,
}

pub struct DeliveredPartition {
    pub queue: String,
    pub partition_id: Uuid,
    pub partition: String,
    /// In offset order, payloads decrypted.
    pub messages: Vec<StoredMessage>,
}

impl Service {
    /// A parked pop's pause: until its wakeup (the recheck starts over), its next recheck
    /// (which backs off, never past `left`), or shutdown. Waiting is not work: the request's
    /// turn of its tenant's concurrency is given back meanwhile (`regent_memory::turns`).
    pub(crate) async fn pause(
        &self,
        notified: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
        recheck: &mut Duration,
        left: Duration,
        stopping: &mut tokio::sync::watch::Receiver<bool>,
    ) {
        regent_memory::turns::parked(async {
            tokio::select! {
                _ = notified => {
                self.runtime.activity.rechecked(Recheck::Wakeup);
                *recheck = FIRST_RECHECK
            }
            _ = tokio::time::sleep((*recheck).min(left)) => {
                self.runtime.activity.rechecked(Recheck::Timer);
                *recheck = (*recheck * 2).min(MAX_RECHECK)
            }
                _ = stopping.changed() => {}
            }
        })
        .await
    }

    /// One pop request: attempts until something is delivered, or (with `wait`) until the
    /// deadline or a shutdown.
    pub async fn pop(self: &Arc<Self>, tenant: &str, req: &PopRequest) -> Result<Popped, Error> {
        let _timer = self.runtime.activity.request(Op::Pop);
        let deadline = Instant::now() + req.timeout.saturating_sub(DEADLINE_MARGIN);
        let waiter = match &req.target {
            Target::Scope { .. } => self.runtime.wakeups.for_tenant(tenant),
            t => self
                .runtime
                .wakeups
                .for_group(tenant, t.queue_name(), &req.group),
        };
        let mut stopping = self.stopping.subscribe();
        let mut recheck = FIRST_RECHECK;
        // Counted as parked from the first empty attempt until the answer, for the fleet's
        // samples; a pop across queues waits on no one queue and is not counted.
        let mut parked = None;
        loop {
            // Registered before the attempt, so a push that commits during it still wakes us.
            let notified = waiter.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();

            if self.runtime.switches.pop_paused(tenant) {
                return Ok(Popped::Paused);
            }
            match self.attempt(tenant, req).await? {
                found @ Popped::Delivered(_) => return Ok(found),
                found if !req.wait => return Ok(found),
                _ => {}
            }
            let now = Instant::now();
            if now >= deadline || *stopping.borrow() {
                return Ok(Popped::TimedOut);
            }
            if parked.is_none() && !matches!(req.target, Target::Scope { .. }) {
                let queue = req.target.queue_name();
                parked = Some(self.runtime.parked.park(tenant, queue));
            }
            self.pause(
                notified.as_mut(),
                &mut recheck,
                deadline - now,
                &mut stopping,
            )
            .await;
            // Out of time: answer now rather than after one more claim, which could take
            // longer than the margin left before the client's own timeout (a claim on Citus
            // asks every shard when nothing is hinted).
            if Instant::now() >= deadline {
                return Ok(Popped::TimedOut);
            }
        }
    }
}
