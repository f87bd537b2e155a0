//! Request fusion: concurrent pushes (and, separately, concurrent acks) share one
//! PostgreSQL transaction, so many small requests cost one commit (one fsync) instead of one
//! each, while every request still gets its own verdicts.
//!
//! The window is adaptive, group-commit style: a few flushers take every request waiting in
//! the queue, run them as one transaction, answer each, and come back for whatever queued up
//! meanwhile. An idle broker flushes a lone request at once; a busy one fuses as much as
//! arrives during a commit. A fused transaction that fails on one request's data is re-run
//! piece by piece, so a bad item fails only its own request.
//!
//! On Citus a transaction that writes on two workers commits in two phases on each, so the
//! requests are fused by node as well as by tenant: a request whose partitions all lie on
//! one worker (as far as this broker knows, `regent_runtime::placements`) is fused only
//! with others for that worker, and the groups commit side by side. On one PostgreSQL every
//! request has the same place, and a batch is one transaction per tenant as before.
//!
//! Flushers run supervised: one that panics loses the requests of the batch it held (they
//! are answered 503, and every write is safe to retry) and is started again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Mutex};

use regent_runtime::placements::Place;
use regent_store::{partitions, StoreError, Tx};
use uuid::Uuid;

use crate::{Error, Service};

/// Flushers per kind. Two let a fused batch form while the other commits; more would split
/// the waiting requests into smaller transactions.
const FLUSHERS: usize = 2;
/// Items (messages or acks) fused into one transaction at most.
pub(crate) const MAX_FUSED_ITEMS: usize = 10_000;

/// A request that can be fused with others of its kind.
pub(crate) trait Fusable: Send + Sized + 'static {
    fn tenant(&self) -> &str;
    fn weight(&self) -> usize;
    /// The node all of the request's partitions lie on, if known; `None` requests are fused
    /// with each other.
    fn place(&self, s: &Service) -> Option<Place>;
    /// Runs `jobs` (all of one tenant) and answers each.
    fn flush(s: &Service, tenant: &str, jobs: Vec<Self>) -> impl Future<Output = ()> + Send;
}

type Queue<J> = Arc<Mutex<mpsc::UnboundedReceiver<J>>>;

/// A queue of fusable requests and its flushers.
pub(crate) struct Batcher<J> {
    jobs: mpsc::UnboundedSender<J>,
    queue: std::sync::Mutex<Option<mpsc::UnboundedReceiver<J>>>,
}

impl<J> Default for Batcher<J> {
    fn default() -> Self {
        let (jobs, rx) = mpsc::unbounded_channel();
        Batcher {
            jobs,
            queue: std::sync::Mutex::new(Some(rx)),
        }
    }
}

impl<J: Fusable> Batcher<J> {
    /// Starts the flushers (supervised, as `name`); called once the service they need exists.
    pub(crate) fn start(&self, s: &Arc<Service>, name: &'static str) {
        let rx = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("a batcher starts once");
        let rx: Queue<J> = Arc::new(Mutex::new(rx));
        for _ in 0..FLUSHERS {
            let (service, rx) = (s.clone(), rx.clone());
            s.supervisor
                .spawn(name, move || flusher(service.clone(), rx.clone()));
        }
    }

    /// Queues a request and waits for its answer, sent after the commit that carried it.
    pub(crate) async fn submit<T>(
        &self,
        job: impl FnOnce(oneshot::Sender<T>) -> J,
    ) -> Result<T, Error> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(job(reply))
            .map_err(|_| Error::shutting_down())?;
        // No answer: the flusher holding the request panicked (its supervisor restarts it),
        // or the broker is going away. Nothing of the request was acknowledged.
        answer.await.map_err(|_| Error::interrupted())
    }
}

async fn flusher<J: Fusable>(s: Arc<Service>, rx: Queue<J>) {
    loop {
        let Some(batch) = next_batch(&rx).await else {
            return;
        };
        let flushes = by_tenant_and_place(&s, batch)
            .into_iter()
            .map(|((tenant, _), jobs)| {
                let s = &s;
                async move { J::flush(s, &tenant, jobs).await }
            });
        futures::future::join_all(flushes).await;
    }
}

/// A transaction's worth of requests: their tenant and place, and the requests.
type Group<J> = ((String, Option<Place>), Vec<J>);

/// The batch split into one transaction's worth per (tenant, place), in arrival order
/// within each.
fn by_tenant_and_place<J: Fusable>(s: &Service, batch: Vec<J>) -> Vec<Group<J>> {
    let mut groups: Vec<Group<J>> = Vec::new();
    for job in batch {
        let key = (job.tenant().to_string(), job.place(s));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, jobs)) => jobs.push(job),
            None => groups.push((key, vec![job])),
        }
    }
    groups
}

/// Every request waiting, up to [`MAX_FUSED_ITEMS`]; `None` once the queue is closed.
async fn next_batch<J: Fusable>(rx: &Queue<J>) -> Option<Vec<J>> {
    let mut rx = rx.lock().await;
    let first = rx.recv().await?;
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
    Some(batch)
}

/// Asks where the partitions in `ids` lie, for those this broker does not know yet, and
/// remembers it (nothing to ask on one PostgreSQL). Returns what it found.
pub(crate) async fn learn_places(
    tx: &Tx<'_>,
    s: &Service,
    ids: impl IntoIterator<Item = Uuid>,
) -> Result<HashMap<Uuid, Place>, StoreError> {
    let unknown = s.runtime.placements.unknown(ids);
    if unknown.is_empty() {
        return Ok(HashMap::new());
    }
    let found = partitions::places(tx, &unknown).await?;
    s.runtime.placements.learn_ids(&found);
    Ok(found.into_iter().collect())
}
