//! Push fusion: concurrent push requests share one PostgreSQL transaction, so many small
//! pushes cost one commit (one fsync) instead of one each.
//!
//! The window is adaptive, group-commit style: a few flushers take every push waiting in
//! the queue, run them as one transaction, answer each request with its own verdicts, and
//! come back for whatever queued up meanwhile. An idle broker flushes a lone push at once; a
//! busy one fuses as much as arrives during a commit. A fused transaction that fails on one
//! request's data is re-run request by request, so a bad item fails only its own request.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Mutex};

use super::error::ApiError;
use super::push::{append_prepared, prepare, PushItem, Verdict};
use super::AppState;

/// Flushers running at once. More than one lets a fused batch form while another commits.
const FLUSHERS: usize = 2;
/// Items fused into one transaction at most.
const MAX_FUSED_ITEMS: usize = 10_000;

/// The request's items come back with the answer: the handler needs them for its response.
type Reply = oneshot::Sender<(Vec<PushItem>, Result<Vec<Verdict>, ApiError>)>;

struct Job {
    tenant: String,
    items: Vec<PushItem>,
    reply: Reply,
}

/// The push side of the broker: where handlers hand their validated items.
pub struct Fuser {
    jobs: mpsc::UnboundedSender<Job>,
    queue: Mutex<Option<mpsc::UnboundedReceiver<Job>>>,
}

impl Default for Fuser {
    fn default() -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        Fuser {
            jobs,
            queue: Mutex::new(Some(rx)),
        }
    }
}

impl Fuser {
    /// Starts the flushers; called once the state they need exists.
    pub(crate) async fn start(state: Arc<AppState>) {
        let rx = state
            .fuser
            .queue
            .lock()
            .await
            .take()
            .expect("the fuser starts once");
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..FLUSHERS {
            tokio::spawn(flusher(state.clone(), rx.clone()));
        }
    }

    /// Appends `items` (validated) and answers with one verdict per item, after commit.
    pub(crate) async fn push(
        &self,
        tenant: &str,
        items: Vec<PushItem>,
    ) -> Result<(Vec<PushItem>, Vec<Verdict>), ApiError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job {
                tenant: tenant.to_string(),
                items,
                reply,
            })
            .map_err(|_| ApiError::Unavailable("shutting down".into()))?;
        let (items, verdicts) = answer
            .await
            .map_err(|_| ApiError::Unavailable("shutting down".into()))?;
        Ok((items, verdicts?))
    }
}

async fn flusher(state: Arc<AppState>, rx: Arc<Mutex<mpsc::UnboundedReceiver<Job>>>) {
    loop {
        let batch = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut n = first.items.len();
            let mut batch = vec![first];
            while n < MAX_FUSED_ITEMS {
                match rx.try_recv() {
                    Ok(job) => {
                        n += job.items.len();
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
            let tenant = rest[0].tenant.clone();
            let (same, other): (Vec<Job>, Vec<Job>) =
                rest.into_iter().partition(|j| j.tenant == tenant);
            rest = other;
            flush(&state, &tenant, same).await;
        }
    }
}

async fn flush(s: &AppState, tenant: &str, jobs: Vec<Job>) {
    let lens: Vec<usize> = jobs.iter().map(|j| j.items.len()).collect();
    let (mut all, replies): (Vec<PushItem>, Vec<Reply>) =
        jobs.into_iter()
            .fold((vec![], vec![]), |(mut all, mut r), j| {
                all.extend(j.items);
                r.push(j.reply);
                (all, r)
            });
    let result = run(s, tenant, &all).await;
    // Hand every request its own items back, with its verdicts or the error.
    let answer = |all: &mut Vec<PushItem>, len: usize, reply: Reply, r| {
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
                let r = run(s, tenant, &all[..*len]).await;
                answer(&mut all, *len, reply, r);
            }
        }
    }
}

/// One transaction: resolve (create) partitions, append, commit; then wake the queues' pops.
async fn run(s: &AppState, tenant: &str, items: &[PushItem]) -> Result<Vec<Verdict>, ApiError> {
    let (queues, verdicts) = crate::in_transaction!(s.store, |tx| {
        let prepared = prepare(tx, s, tenant, items, None).await?;
        let verdicts = append_prepared(tx, &prepared).await?;
        Ok((prepared.queues, verdicts))
    })?;
    for q in &queues {
        s.wakeups.notify(tenant, q);
    }
    Ok(verdicts)
}
