//! Request fusion: concurrent pushes (and, separately, concurrent acks) share one
//! PostgreSQL transaction, so many small requests cost one commit (one fsync) instead of one
//! each, while every request still gets its own verdicts.
//!
//! The window is adaptive, group-commit style: a few flushers take every request waiting in
//! the queue, run them as one transaction, answer each, and come back for whatever queued up
//! meanwhile. An idle broker flushes a lone request at once; a busy one fuses as much as
//! arrives during a commit. A fused transaction that fails on one request's data is re-run
//! piece by piece, so a bad item fails only its own request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Mutex};
use uuid::Uuid;

use super::error::ApiError;
use super::push::{append_prepared, prepare, PushItem, Verdict};
use super::AppState;
use crate::broker::ack_plan::AckPlan;
use crate::peers::Announcement;
use crate::store::ack::{run_group, run_groups, AckGroup, Acked};
use crate::store::push::Dedup;

/// Flushers per kind. Two let a fused batch form while the other commits; more would split
/// the waiting requests into smaller transactions.
const FLUSHERS: usize = 2;
/// Items (messages or acks) fused into one transaction at most.
const MAX_FUSED_ITEMS: usize = 10_000;

/// A request that can be fused with others of its kind.
pub(crate) trait Fusable: Send + Sized + 'static {
    fn tenant(&self) -> &str;
    fn weight(&self) -> usize;
    /// Runs `jobs` (all of one tenant) and answers each.
    fn flush(state: &AppState, tenant: &str, jobs: Vec<Self>) -> impl Future<Output = ()> + Send;
}

/// A queue of fusable requests and its flushers.
pub(crate) struct Batcher<J> {
    jobs: mpsc::UnboundedSender<J>,
    queue: Mutex<Option<mpsc::UnboundedReceiver<J>>>,
}

impl<J> Default for Batcher<J> {
    fn default() -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        Batcher {
            jobs,
            queue: Mutex::new(Some(rx)),
        }
    }
}

impl<J: Fusable> Batcher<J> {
    /// Starts the flushers; called once the state they need exists.
    pub(crate) async fn start(&self, state: Arc<AppState>) {
        let rx = self
            .queue
            .lock()
            .await
            .take()
            .expect("a batcher starts once");
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..FLUSHERS {
            tokio::spawn(flusher(state.clone(), rx.clone()));
        }
    }

    fn submit(&self, job: J) -> Result<(), ApiError> {
        self.jobs
            .send(job)
            .map_err(|_| ApiError::Unavailable("shutting down".into()))
    }
}

async fn flusher<J: Fusable>(state: Arc<AppState>, rx: Arc<Mutex<mpsc::UnboundedReceiver<J>>>) {
    loop {
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut n = first.weight();
            let mut batch = vec![first];
            while n < MAX_FUSED_ITEMS {
                match rx.try_recv() {
                    Ok(job) => {
                        n += job.weight();
                        batch.push(job);
                    }
                    Err(_) => break,
                }
            }
            batch
        };
        // One transaction per tenant in the batch.
        let mut rest = batch;
        while !rest.is_empty() {
            let tenant = rest[0].tenant().to_string();
            let (same, other): (Vec<J>, Vec<J>) =
                rest.into_iter().partition(|j| j.tenant() == tenant);
            rest = other;
            J::flush(&state, &tenant, same).await;
        }
    }
}

// ---- pushes

/// The request's items come back with the answer: the handler needs them for its response.
type PushReply = oneshot::Sender<(Vec<PushItem>, Result<Vec<Verdict>, ApiError>)>;

pub(crate) struct PushJob {
    tenant: String,
    items: Vec<PushItem>,
    reply: PushReply,
}

impl Batcher<PushJob> {
    /// Appends `items` (validated) and answers with one verdict per item, after commit.
    pub(crate) async fn push(
        &self,
        tenant: &str,
        items: Vec<PushItem>,
    ) -> Result<(Vec<PushItem>, Vec<Verdict>), ApiError> {
        let (reply, answer) = oneshot::channel();
        self.submit(PushJob {
            tenant: tenant.to_string(),
            items,
            reply,
        })?;
        let (items, verdicts) = answer
            .await
            .map_err(|_| ApiError::Unavailable("shutting down".into()))?;
        Ok((items, verdicts?))
    }
}

impl Fusable for PushJob {
    fn tenant(&self) -> &str {
        &self.tenant
    }

    fn weight(&self) -> usize {
        self.items.len()
    }

    async fn flush(s: &AppState, tenant: &str, jobs: Vec<PushJob>) {
        let lens: Vec<usize> = jobs.iter().map(|j| j.items.len()).collect();
        let (mut all, replies): (Vec<PushItem>, Vec<PushReply>) =
            jobs.into_iter()
                .fold((vec![], vec![]), |(mut all, mut r), j| {
                    all.extend(j.items);
                    r.push(j.reply);
                    (all, r)
                });
        let result = push_transaction(s, tenant, &all).await;
        // Hand every request its own items back, with its verdicts or the error.
        let answer = |all: &mut Vec<PushItem>, len: usize, reply: PushReply, r| {
            let mine: Vec<PushItem> = all.drain(..len).collect();
            let _ = reply.send((mine, r));
        };
        match result {
            Ok(verdicts) => {
                let mut verdicts = verdicts.into_iter();
                for (len, reply) in lens.iter().zip(replies) {
                    let mine = verdicts.by_ref().take(*len).collect();
                    answer(&mut all, *len, reply, Ok(mine));
                }
            }
            Err(e) if replies.len() == 1 => {
                let reply = replies.into_iter().next().expect("one");
                answer(&mut all, lens[0], reply, Err(e));
            }
            // Someone's data broke the fused transaction: each request on its own.
            Err(_) => {
                for (len, reply) in lens.iter().zip(replies) {
                    let r = push_transaction(s, tenant, &all[..*len]).await;
                    answer(&mut all, *len, reply, r);
                }
            }
        }
    }
}

/// One transaction: resolve (create) partitions, append, commit; then wake the queues' pops.
/// Optimistic first (no duplicate lookup); a duplicate voids that transaction, and it runs
/// again carefully.
async fn push_transaction(
    s: &AppState,
    tenant: &str,
    items: &[PushItem],
) -> Result<Vec<Verdict>, ApiError> {
    let attempt = |dedup| async move {
        crate::in_transaction!(s.store, |tx| {
            let prepared = prepare(tx, s, tenant, items).await?;
            let verdicts = append_prepared(tx, &prepared, dedup).await?;
            Ok((prepared.written(tenant), verdicts))
        })
    };
    let (written, verdicts) = match attempt(Dedup::Optimistic).await {
        Err(e) if e.is_duplicate() => attempt(Dedup::Careful).await?,
        r => r?,
    };
    s.announce(&written);
    Ok(verdicts)
}

// ---- acks

pub(crate) struct AckJob {
    tenant: String,
    groups: Vec<AckGroup>,
    reply: oneshot::Sender<Vec<AckPlan>>,
}

impl Batcher<AckJob> {
    /// Resolves and commits `groups` and answers with one plan per group, after commit.
    pub(crate) async fn ack(
        &self,
        tenant: &str,
        groups: Vec<AckGroup>,
    ) -> Result<Vec<AckPlan>, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.submit(AckJob {
            tenant: tenant.to_string(),
            groups,
            reply,
        })?;
        answer
            .await
            .map_err(|_| ApiError::Unavailable("shutting down".into()))
    }
}

impl Fusable for AckJob {
    fn tenant(&self) -> &str {
        &self.tenant
    }

    fn weight(&self) -> usize {
        self.groups.iter().map(|g| g.items.len()).sum()
    }

    /// Every group of every request in one transaction, in the global lock order. A group
    /// whose partition id is not a UUID fails in the database by design (its own error
    /// message is the answer), so it runs on its own, as does every group when the fused
    /// transaction fails: a group's failure never touches another's outcome.
    async fn flush(s: &AppState, tenant: &str, jobs: Vec<AckJob>) {
        let mut slots: Vec<(usize, usize)> = Vec::new();
        let mut alone: Vec<(usize, usize)> = Vec::new();
        for (j, job) in jobs.iter().enumerate() {
            for (g, group) in job.groups.iter().enumerate() {
                if Uuid::parse_str(&group.partition_id).is_ok() {
                    slots.push((j, g));
                } else {
                    alone.push((j, g));
                }
            }
        }
        let key = |&(j, g): &(usize, usize)| {
            let group = &jobs[j].groups[g];
            (
                Uuid::parse_str(&group.partition_id).ok(),
                group.group.clone(),
            )
        };
        slots.sort_by_key(key);
        let mut plans: HashMap<(usize, usize), Acked> = HashMap::new();
        let fused: Vec<&AckGroup> = slots.iter().map(|&(j, g)| &jobs[j].groups[g]).collect();
        match run_groups(&s.store, tenant, &fused).await {
            Ok(done) => plans.extend(slots.iter().copied().zip(done)),
            Err(_) => alone.extend(slots),
        }
        let singles = futures::future::join_all(
            alone
                .iter()
                .map(|&(j, g)| run_group(&s.store, tenant, &jobs[j].groups[g])),
        )
        .await;
        plans.extend(alone.into_iter().zip(singles));
        // Committed: announced before any answer, as a push is.
        let mut freed = Announcement {
            tenant: tenant.to_string(),
            ..Default::default()
        };
        for (&(j, g), acked) in &plans {
            if let Some(queue) = &acked.reopened {
                freed
                    .reopened
                    .push((queue.clone(), jobs[j].groups[g].group.clone()));
            }
        }
        if !freed.reopened.is_empty() {
            s.announce(&freed);
        }
        for (j, job) in jobs.into_iter().enumerate() {
            let mine = (0..job.groups.len())
                .map(|g| plans.remove(&(j, g)).expect("every group has a plan").plan)
                .collect();
            let _ = job.reply.send(mine);
        }
    }
}
