//! Queen Streams (`/streams/v1/*`): registering a query, a cycle (its state operations, its
//! sink pushes and its source ack in ONE transaction), and reading state.
//!
//! A cycle is exactly once under retries: it locks its (partition, query) row first, and a
//! cycle whose digest (a hash of its request body) is the last committed one's is a replay,
//! answered with the stored answer and applying nothing. Any other cycle whose ack names a
//! lease that is no longer live, or messages already committed, is refused whole: its work
//! was done (or will be redone) under another lease. Sink items sent without a transaction
//! id get one derived from the cycle, so even a cycle applied twice pushes once.
//! (docs/design/streams.md.)

use std::sync::Arc;

use uuid::Uuid;

use regent_memory::streams::QueryLabel;
pub use regent_memory::streams::StreamTotal;
use regent_memory::tallies::Tally;
use regent_memory::Announcement;
use regent_rules::ack_plan::ALREADY_COMMITTED;
use regent_rules::status::AckStatus;
use regent_rules::streams::{collapse, register, sink_transaction_id, Registration, StateOp};
use regent_store::append::Dedup;
use regent_store::streams::{self as store, LastCycle, NewQuery, StateRow};
pub use regent_store::streams::{StoredState, StreamPartition, StreamQuery};
use regent_store::{commit_if, maintenance, StoreError, Tx};

use crate::ack::{ack_group, AckGroup, LeaseCheck, SentAck};
use crate::push::{append, hold, prepare, queued, PushItem, Verdict};
use crate::queues::Page;
use crate::Family;
use crate::{Error, Service};

/// What a registration asks.
pub struct Register<'a> {
    pub name: &'a str,
    pub source_queue: &'a str,
    pub sink_queue: Option<&'a str>,
    pub config_hash: &'a str,
    pub reset: bool,
}

/// What a registration did.
pub enum Registered {
    /// `fresh`: the name was new; `reset`: the stored state was deleted.
    Done {
        query: StreamQuery,
        fresh: bool,
        reset: bool,
    },
    /// Another config hash is stored under the name and `reset` was not asked.
    Conflict { query: StreamQuery },
}

/// A state value: the client's JSON text and its `windowEnd`, when it has a numeric one.
#[derive(Clone, Debug)]
pub struct StateValue {
    pub json: String,
    pub window_end: Option<f64>,
}

/// A cycle's source ack.
#[derive(Clone, Debug)]
pub struct CycleAck {
    pub transaction_id: String,
    pub lease_id: Option<String>,
    /// `Err(sent)`: a status the streams protocol does not know (the cycle fails, naming it).
    pub status: Result<AckStatus, String>,
    pub error: Option<String>,
}

/// One cycle, as sent.
pub struct Cycle {
    pub query_id: Uuid,
    pub partition_id: Uuid,
    pub group: String,
    pub state_ops: Vec<StateOp<StateValue>>,
    /// Each item, and whether the client sent its transaction id (when not, the cycle
    /// derives one: `regent_rules::streams::sink_transaction_id`).
    pub pushes: Vec<(PushItem, bool)>,
    pub ack: Option<CycleAck>,
    pub release_lease: bool,
    /// The request's identity (`regent_rules::streams::cycle_digest`).
    pub digest: Uuid,
}

/// What a committed cycle did, for its answer.
pub struct Applied<'a> {
    /// The source queue.
    pub queue: &'a str,
    pub state_ops: usize,
    /// The sink items, with their ids as stored, and what became of each.
    pub pushes: &'a [PushItem],
    pub verdicts: &'a [Verdict],
    pub ack: Option<AckDone>,
}

/// What the cycle's ack did.
#[derive(Clone, Copy, Debug)]
pub struct AckDone {
    /// Messages the cursor moved past.
    pub count: i64,
    pub lease_released: bool,
    pub dlq: bool,
}

/// How a cycle ended.
pub enum CycleOutcome {
    /// Committed now (`replayed: false`), or earlier with this same request: the answer as
    /// rendered when it committed.
    Answered { answer: Vec<u8>, replayed: bool },
    /// Nothing committed; `queue` is the source queue when the query was found.
    Refused {
        queue: Option<String>,
        error: String,
    },
}

/// The default reason of a dead letter filed by a cycle's `failed`/`dlq` ack (Queen's).
pub const CYCLE_FAILURE_REASON: &str = "Streaming cycle reported failure";

/// The refusal texts of a cycle.
pub const QUERY_NOT_FOUND: &str = "query not found";
pub const PARTITION_NOT_OF_SOURCE: &str = "partition not found in the query's source queue";

impl Family<'_, Streams> {
    /// Registers a query by name within the tenant (spec §16.1).
    pub async fn register(&self, tenant: &str, r: &Register<'_>) -> Result<Registered, Error> {
        let q = NewQuery {
            tenant,
            name: r.name,
            source_queue: r.source_queue,
            sink_queue: r.sink_queue,
            config_hash: r.config_hash,
        };
        let out = commit_if!(self.store, |tx| {
            let (mut query, created) = store::claim(tx, Uuid::now_v7(), &q).await?;
            let decision = if created {
                Registration::Create
            } else {
                register(Some(&query.config_hash), r.config_hash, r.reset)
            };
            Ok(match decision {
                Registration::Conflict => Err(Registered::Conflict { query }),
                Registration::Reset => {
                    store::reset(tx, query.id, &q).await?;
                    query.config_hash = r.config_hash.to_string();
                    query.source_queue = r.source_queue.to_string();
                    query.sink_queue = r.sink_queue.map(str::to_string);
                    Ok(Registered::Done {
                        query,
                        fresh: false,
                        reset: true,
                    })
                }
                Registration::Create | Registration::Keep => Ok(Registered::Done {
                    query,
                    fresh: created,
                    reset: false,
                }),
            })
        })?;
        Ok(out.unwrap_or_else(|conflict| conflict))
    }

    /// One cycle in one transaction (spec §16.2). `render` writes the answer of a committed
    /// cycle; it is stored with the cycle, so a replay answers the same bytes.
    pub async fn cycle(
        &self,
        tenant: &Arc<str>,
        cycle: Cycle,
        render: &(dyn Fn(&Applied<'_>) -> Vec<u8> + Sync),
    ) -> Result<CycleOutcome, Error> {
        let staged = self.stage(cycle);
        let room = self.reserve(tenant, staged.items.len() as i64).await?;
        let run = commit_if!(self.store, |tx| {
            self.run_cycle(tx, tenant, &staged, render).await
        });
        let done = match run {
            Ok(Ok(done)) => done,
            Ok(Err((query, error))) => {
                room.released();
                if let Some(q) = &query {
                    self.count_cycle(tenant, q, |t| t.failures += 1);
                }
                let queue = query.map(|q| q.source_queue);
                return Ok(CycleOutcome::Refused { queue, error });
            }
            Err(e) => {
                room.released();
                return Err(e.into());
            }
        };
        room.committed(queued(&done.verdicts));
        if let Some(hook) = &self.abort_after_commit {
            hook.check(&staged.items, &done.verdicts);
        }
        self.committed_cycle(tenant, &staged, &done);
        Ok(CycleOutcome::Answered {
            answer: done.answer,
            replayed: done.replayed,
        })
    }

    /// The cycle made ready for its transaction: sink items given their derived ids, the ack
    /// as an ack group, the state operations collapsed per key.
    fn stage(&self, mut cycle: Cycle) -> Staged {
        let group = self.cycle_ack_group(&cycle);
        let items = std::mem::take(&mut cycle.pushes)
            .into_iter()
            .enumerate()
            .map(|(i, (mut item, sent_id))| {
                if !sent_id {
                    item.message.transaction_id = sink_transaction_id(cycle.digest, i);
                }
                item
            })
            .collect();
        let state_ops = cycle.state_ops.len();
        let (deletes, upserts) = collapse(std::mem::take(&mut cycle.state_ops));
        Staged {
            cycle,
            items,
            group,
            state_ops,
            deletes,
            upserts,
        }
    }

    /// The cycle's transaction (see the module's note); `Ok(Err)` is a refusal, rolled back.
    async fn run_cycle(
        &self,
        tx: &Tx<'_>,
        tenant: &str,
        st: &Staged,
        render: &(dyn Fn(&Applied<'_>) -> Vec<u8> + Sync),
    ) -> Result<Result<Done, Refused>, StoreError> {
        let c = &st.cycle;
        let Some((query, holder)) = store::scope(tx, tenant, c.query_id, c.partition_id).await?
        else {
            return Ok(Err((None, QUERY_NOT_FOUND.to_string())));
        };
        let refuse = |why: String| Ok(Err((Some(query.clone()), why)));
        if holder.as_deref() != Some(query.source_queue.as_str()) {
            return refuse(PARTITION_NOT_OF_SOURCE.into());
        }
        if let Some(answer) = store::lock_cycle(tx, c.partition_id, c.query_id, c.digest).await? {
            return Ok(Ok(Done::replay(query, answer)));
        }
        let buffering = self.runtime.switches.buffering(tenant)
            && maintenance::still_buffering(tx, tenant).await?;
        let prepared = prepare(tx, self, tenant, &st.items).await?;
        let ack = match &st.group {
            None => None,
            Some(Err(why)) => return refuse(why.clone()),
            Some(Ok(g)) => match run_ack(tx, tenant, g, c.release_lease).await? {
                Ok(done) => Some(done),
                Err(why) => return refuse(why),
            },
        };
        let rows: Vec<StateRow<'_>> = st
            .upserts
            .iter()
            .map(|(key, v)| StateRow {
                key,
                value: &v.json,
                window_end: v.window_end,
            })
            .collect();
        store::write_state(tx, c.partition_id, c.query_id, &st.deletes, &rows).await?;
        let verdicts = if buffering {
            hold(tx, tenant, &prepared).await?
        } else {
            append(tx, &prepared, Dedup::Careful).await?
        };
        if let Some(Verdict::Failed { error }) = verdicts
            .iter()
            .find(|v| matches!(v, Verdict::Failed { .. }))
        {
            return refuse(format!("PUSH operation failed: {error}"));
        }
        let last = LastCycle {
            digest: c.digest,
            answer: render(&Applied {
                queue: &query.source_queue,
                state_ops: st.state_ops,
                pushes: &st.items,
                verdicts: &verdicts,
                ack: ack.as_ref().map(|a| a.done),
            }),
        };
        store::record_cycle(tx, c.partition_id, c.query_id, &last, st.state_ops as i64).await?;
        let mut written = prepared.written(tenant);
        if let Some(r) = ack.as_ref().and_then(|a| a.reopened.clone()) {
            written.add_reopened(r.queue, r.queue_id, r.partition_id, c.group.clone());
        }
        Ok(Ok(Done {
            query,
            answer: last.answer,
            replayed: false,
            verdicts,
            written,
            ack,
        }))
    }

    /// After a cycle's commit: the counters, the series, the wakeups; nothing for a replay
    /// but its count.
    fn committed_cycle(&self, tenant: &str, st: &Staged, done: &Done) {
        if done.replayed {
            self.count_cycle(tenant, &done.query, |t| t.replays += 1);
            return;
        }
        self.count_outcomes(&done.verdicts);
        self.tally_pushed(&done.written, &done.verdicts);
        if let Some(a) = &done.ack {
            if let Some((queue, t)) = a.tally {
                self.runtime.tallies.add(queue, t);
            }
            if a.done.lease_released {
                let lease = st.cycle.ack.as_ref().and_then(|a| a.lease_id.as_ref());
                if let Some(lease) = lease {
                    self.runtime.deliveries.forget(lease);
                }
            }
        }
        self.announce(&done.written);
        let (ops, pushed) = (st.state_ops as u64, queued(&done.verdicts) as u64);
        self.count_cycle(tenant, &done.query, |t| {
            t.cycles += 1;
            t.state_ops += ops;
            t.pushed += pushed;
        });
    }

    fn count_cycle(&self, tenant: &str, q: &StreamQuery, f: impl FnOnce(&mut StreamTotal)) {
        let label = QueryLabel {
            id: q.id,
            tenant,
            name: &q.name,
        };
        self.runtime.streams.count(&label, f);
    }

    /// The cycle's ack as an ack group of one item, its offsets known when this broker
    /// delivered them; `Err` for a status the streams protocol refuses.
    fn cycle_ack_group(&self, c: &Cycle) -> Option<Result<AckGroup, String>> {
        let a = c.ack.as_ref()?;
        let status = match &a.status {
            Ok(s) => *s,
            Err(sent) => return Some(Err(format!("ACK operation failed: invalid status: {sent}"))),
        };
        let error = match status {
            AckStatus::Dlq => Some(
                a.error
                    .clone()
                    .unwrap_or_else(|| CYCLE_FAILURE_REASON.into()),
            ),
            _ => a.error.clone(),
        };
        let item = SentAck {
            transaction_id: a.transaction_id.clone(),
            partition_id: c.partition_id.to_string(),
            lease_id: a.lease_id.clone(),
            status,
            error,
        };
        let mut group = AckGroup {
            partition_id: item.partition_id.clone(),
            group: c.group.clone(),
            lease_id: a.lease_id.clone(),
            items: vec![item],
            known: None,
            release_at_once: false,
        };
        self.know_offsets(std::iter::once(&mut group));
        Some(Ok(group))
    }

    /// What each stream query's cycles did on this broker since start: (tenant, query name,
    /// counts).
    pub fn totals(&self) -> Vec<(String, String, StreamTotal)> {
        self.runtime.streams.all()
    }

    /// The tenant's queries, by name.
    pub async fn queries(&self, tenant: &str) -> Result<Vec<StreamQuery>, Error> {
        let client = self.store.client().await?;
        Ok(store::list(&client, tenant).await?)
    }

    /// The tenant's query named by `key`, its id or the name its client registered it under
    /// (`NotFound` otherwise), with a page of its source partitions, most recently cycled
    /// first, and how many there are.
    pub async fn partitions(
        &self,
        tenant: &str,
        key: &str,
        page: Page,
    ) -> Result<(StreamQuery, Vec<StreamPartition>, i64), Error> {
        let client = self.store.client().await?;
        let by_id = match Uuid::parse_str(key) {
            Ok(id) => store::find(&client, tenant, id).await?,
            Err(_) => None,
        };
        let query = match by_id {
            Some(q) => q,
            None => store::find_named(&client, tenant, key)
                .await?
                .ok_or_else(|| Error::NotFound(QUERY_NOT_FOUND.into()))?,
        };
        let (rows, total) = store::partitions(&client, query.id, page.limit, page.offset).await?;
        Ok((query, rows, total))
    }

    /// The tenant's query's state rows in a partition (spec §16.3); none for a query the
    /// tenant does not have.
    pub async fn state(
        &self,
        tenant: &str,
        query: Uuid,
        partition: Uuid,
        filter: &StateFilter<'_>,
    ) -> Result<Vec<StoredState>, Error> {
        let client = self.store.client().await?;
        Ok(store::read_state(&client, tenant, query, partition, filter).await?)
    }
}

pub use regent_store::streams::StateFilter;

/// A cycle made ready for its transaction (`Service::stage`).
struct Staged {
    /// The cycle as sent, its state operations and pushes moved out into the fields below.
    cycle: Cycle,
    /// The sink items, each with its transaction id (sent or derived).
    items: Vec<PushItem>,
    group: Option<Result<AckGroup, String>>,
    /// How many state operations were sent.
    state_ops: usize,
    deletes: Vec<String>,
    upserts: Vec<(String, StateValue)>,
}

/// A refusal: the query when it was found, and why.
type Refused = (Option<StreamQuery>, String);

/// What a cycle's transaction did.
struct Done {
    query: StreamQuery,
    answer: Vec<u8>,
    replayed: bool,
    verdicts: Vec<Verdict>,
    written: Announcement,
    ack: Option<AckRun>,
}

impl Done {
    fn replay(query: StreamQuery, answer: Vec<u8>) -> Done {
        Done {
            query,
            answer,
            replayed: true,
            verdicts: Vec::new(),
            written: Announcement::default(),
            ack: None,
        }
    }
}

/// The ack's result, the queue it reopened for its group, and its tally for the series.
struct AckRun {
    done: AckDone,
    reopened: Option<crate::ack::Reopened>,
    tally: Option<(Uuid, Tally)>,
}

/// The cycle's ack inside its transaction, on the seed's commit rules with the lease checked
/// strictly: `Err` when refused, or when it would change nothing (its messages were committed
/// before: this cycle's work is done, or is another lease's to do).
async fn run_ack(
    tx: &Tx<'_>,
    tenant: &str,
    group: &AckGroup,
    release: bool,
) -> Result<Result<AckRun, String>, StoreError> {
    let mut group = group.clone();
    group.release_at_once = release;
    let acked = match ack_group(tx, tenant, &group, LeaseCheck::Strict).await {
        Ok(a) => a,
        Err(e) if e.is_client_error() => return Ok(Err(format!("ACK operation failed: {e}"))),
        Err(e) => return Err(e),
    };
    let item = acked.plan.items.first().cloned().unwrap_or_default();
    if !item.success {
        let why = item.error.unwrap_or_default();
        return Ok(Err(format!("ACK operation failed: {why}")));
    }
    if item.noop {
        return Ok(Err(format!("ACK operation failed: {ALREADY_COMMITTED}")));
    }
    let count = acked.tally.map_or(0, |(_, t)| t.completed);
    let done = AckDone {
        count,
        lease_released: item.lease_released,
        dlq: item.dlq,
    };
    Ok(Ok(AckRun {
        done,
        reopened: acked.reopened,
        tally: acked.tally,
    }))
}

/// The use cases of stream queries and cycles: `service.streams().…`.
pub enum Streams {}

impl Service {
    pub fn streams(&self) -> Family<'_, Streams> {
        Family::new(self)
    }
}
