//! Request fusion: concurrent pushes (and, separately, concurrent acks) share one
//! PostgreSQL transaction, so many small requests cost one commit (one fsync) instead of one
//! each, while every request still gets its own verdicts.
//!
//! The window is adaptive, group-commit style: each tenant's lane runs up to two flushes,
//! each taking every request of the tenant waiting, running them as one transaction and
//! answering each, and comes back for whatever queued up meanwhile. An idle broker flushes a lone request at once; a busy one fuses as much as
//! arrives during a commit. A fused transaction that fails on one request's data is re-run
//! piece by piece, so a bad item fails only its own request.
//!
//! On Citus a transaction that writes on two workers commits in two phases on each, so the
//! requests are fused by node as well as by tenant: a request whose partitions all lie on
//! one worker (as far as this broker knows, `regent_memory::placements`) is fused only
//! with others for that worker, and the groups commit side by side. On one PostgreSQL every
//! request has the same place, and a batch is one transaction per tenant as before.
//!
//! Lanes run supervised: one whose flush panics loses the requests of the batches it held
//! (they are answered 503, and every write is safe to retry) and is started again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, oneshot, Mutex};

use regent_memory::placements::Place;
use regent_store::{partitions, StoreError, Tx};
use uuid::Uuid;

use crate::{Error, Service};

/// Flushes running at once per tenant. Two let a fused batch form while the other commits;
/// more would split the waiting requests into smaller transactions.
const FLUSHERS: usize = 2;
/// Items (messages or acks) fused into one transaction at most.
pub(crate) const MAX_FUSED_ITEMS: usize = 10_000;
/// A tenant's lane with nothing to do for this long closes; its next request opens another.
const LANE_IDLE: Duration = Duration::from_secs(30);

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

/// A queue of fusable requests, the router that hands them to their tenant's lane, and the
/// lanes.
///
/// Architecture Invariant: a tenant's requests never wait for another tenant's flush. Each
/// tenant has a lane of its own with its own flushes; with one set of flushers for every
/// tenant, a request of a quiet tenant waited for a heavy tenant's flush of thousands of
/// messages to end (B's p99 6.5x its own beside a tenant at a twelfth of the broker's
/// capacity: BENCHMARKS.md, issue 36 "noisy neighbour").
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
    /// Starts the router (supervised, as `name`, as are the lanes); called once the service
    /// they need exists.
    pub(crate) fn start(&self, s: &Arc<Service>, name: &'static str) {
        let rx = self
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("a batcher starts once");
        let rx: Queue<J> = Arc::new(Mutex::new(rx));
        let service = s.clone();
        s.supervisor
            .spawn(name, move || route(service.clone(), rx.clone(), name));
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
        // No answer: the flush holding the request panicked (its supervisor restarts the
        // lane), or the broker is going away. Nothing of the request was acknowledged.
        answer.await.map_err(|_| Error::interrupted())
    }
}

/// Hands each request to its tenant's lane, opening one where there is none (or it closed
/// while idle: a closed lane refuses the request, which goes to a new one).
async fn route<J: Fusable>(s: Arc<Service>, rx: Queue<J>, name: &'static str) {
    let mut rx = rx.lock().await;
    let mut lanes: HashMap<String, mpsc::UnboundedSender<J>> = HashMap::new();
    while let Some(job) = rx.recv().await {
        let job = match lanes.get(job.tenant()) {
            Some(lane) => match lane.send(job) {
                Ok(()) => continue,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        lanes.retain(|_, lane| !lane.is_closed());
        let (lane, lane_rx) = mpsc::unbounded_channel();
        let tenant = job.tenant().to_string();
        let _ = lane.send(job);
        let lane_rx: Queue<J> = Arc::new(Mutex::new(lane_rx));
        let service = s.clone();
        s.supervisor
            .spawn(name, move || run_lane(service.clone(), lane_rx.clone()));
        lanes.insert(tenant, lane);
    }
}

/// One tenant's lane: up to [`FLUSHERS`] flushes at once, each of every request waiting when
/// it starts. Closes after [`LANE_IDLE`] with nothing to do, flushing what arrived meanwhile.
async fn run_lane<J: Fusable>(s: Arc<Service>, rx: Queue<J>) {
    let s: &Service = &s;
    let mut rx = rx.lock().await;
    let mut running = FuturesUnordered::new();
    loop {
        tokio::select! {
            Some(()) = running.next(), if !running.is_empty() => {}
            first = rx.recv(), if running.len() < FLUSHERS => {
                let Some(first) = first else { break };
                running.push(flush(s, fill(first, &mut rx)));
            }
            () = tokio::time::sleep(LANE_IDLE), if running.is_empty() => {
                rx.close();
                while let Some(first) = rx.recv().await {
                    flush(s, fill(first, &mut rx)).await;
                }
                return;
            }
        }
    }
    while running.next().await.is_some() {}
}

/// One transaction's worth per place (see the module's note on Citus), side by side.
async fn flush<J: Fusable>(s: &Service, batch: Vec<J>) {
    let flushes = by_tenant_and_place(s, batch)
        .into_iter()
        .map(|((tenant, _), jobs)| async move { J::flush(s, &tenant, jobs).await });
    futures::future::join_all(flushes).await;
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

/// `first` and every request waiting after it, up to [`MAX_FUSED_ITEMS`].
fn fill<J: Fusable>(first: J, rx: &mut mpsc::UnboundedReceiver<J>) -> Vec<J> {
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
