//! Push: validated items appended to their partitions' logs, deduplicated by transaction id,
//! in transactions fused across concurrent requests. The transaction route shares
//! [`prepare`] and [`append`].
//!
//! A request refused at any step leaves nothing behind, not even the queue it would have
//! created: partitions are created inside the same transaction, at the head of the global
//! lock order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::oneshot;
use uuid::Uuid;

use regent_memory::known::Known;
use regent_memory::placements::Place;
use regent_memory::tallies::Tally;
use regent_memory::{Announcement, Op, Outcome};
use regent_rules::naming::derive_namespace_task;
use regent_rules::options::QueueOptions;
use regent_rules::push_plan::repeats;
use regent_rules::tx_hash::tx_hash;
use regent_store::append::{append_known, append_many, Appended, Batch, Dedup, Window};
use regent_store::maintenance;
use regent_store::partitions::{self, NewPartition, PartitionKey, PartitionRef};
use regent_store::{frames, in_transaction, Message, StoreError, Tx};

use crate::fusion::{self, Fusable};
use crate::{Error, Service};

/// One pushed item: where it goes, and the message.
#[derive(Clone, Debug)]
pub struct PushItem {
    pub queue: String,
    pub partition: String,
    pub message: Message,
}

/// What became of one pushed item.
#[derive(Clone, Debug)]
pub enum Verdict {
    Queued {
        message_id: Uuid,
        partition: Uuid,
    },
    /// Held in the buffer while push maintenance is on; appended when it ends.
    Buffered {
        message_id: Uuid,
        partition: Uuid,
    },
    /// Its transaction id was already in the partition (or earlier in the request);
    /// `message_id` is `None` when the log no longer holds that message.
    Duplicate {
        message_id: Option<Uuid>,
        partition: Uuid,
    },
    Failed {
        error: String,
    },
}

impl Verdict {
    /// The message id and partition of an item that was stored (or is, or will be).
    pub fn stored(&self) -> Option<(Option<Uuid>, Uuid)> {
        match self {
            Verdict::Queued {
                message_id,
                partition,
            }
            | Verdict::Buffered {
                message_id,
                partition,
            } => Some((Some(*message_id), *partition)),
            Verdict::Duplicate {
                message_id,
                partition,
            } => Some((*message_id, *partition)),
            Verdict::Failed { .. } => None,
        }
    }
}

/// How many new messages a push wrote (buffered ones count: they will be appended).
pub fn queued(verdicts: &[Verdict]) -> i64 {
    verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Queued { .. } | Verdict::Buffered { .. }))
        .count() as i64
}

impl Service {
    /// Appends `items` and answers with one verdict per item, after commit. The items come
    /// back with the verdicts: the caller renders its answer from them.
    pub async fn push(
        &self,
        tenant: &Arc<str>,
        items: Vec<PushItem>,
    ) -> Result<(Vec<PushItem>, Vec<Verdict>), Error> {
        let _timer = self.runtime.activity.request(Op::Push);
        if items.is_empty() {
            return Ok((items, Vec::new()));
        }
        // Room under the tenant's cap is held before anything is written, so a refusal is
        // whole.
        let room = self.reserve(tenant, items.len() as i64).await?;
        let (items, verdicts) = self
            .pushes
            .submit(|reply| PushJob {
                tenant: tenant.to_string(),
                items,
                reply,
            })
            .await?;
        let verdicts = verdicts?;
        self.count_outcomes(&verdicts);
        room.committed(queued(&verdicts));
        self.runtime
            .activity
            .carried(Op::Push, queued(&verdicts) as usize);
        Ok((items, verdicts))
    }
}

/// The request's items come back with the answer.
type PushReply = oneshot::Sender<(Vec<PushItem>, Result<Vec<Verdict>, Error>)>;

pub(crate) struct PushJob {
    tenant: String,
    items: Vec<PushItem>,
    reply: PushReply,
}

impl Fusable for PushJob {
    fn tenant(&self) -> &str {
        &self.tenant
    }

    fn weight(&self) -> usize {
        self.items.len()
    }

    fn place(&self, s: &Service) -> Option<Place> {
        let names = self.items.iter();
        let names = names.map(|i| (i.queue.as_str(), i.partition.as_str()));
        s.runtime.placements.of_names(&self.tenant, names)
    }

    async fn flush(s: &Service, tenant: &str, mut jobs: Vec<PushJob>) {
        // One request: its items go back as they came, not through a copy of them all.
        if jobs.len() == 1 {
            let job = jobs.pop().expect("one job");
            let result = push_transaction(s, tenant, &job.items).await;
            let _ = job.reply.send((job.items, result));
            return;
        }
        let lens: Vec<usize> = jobs.iter().map(|j| j.items.len()).collect();
        let mut all = Vec::with_capacity(lens.iter().sum());
        let mut replies = Vec::with_capacity(jobs.len());
        for j in jobs {
            all.extend(j.items);
            replies.push(j.reply);
        }
        let result = push_transaction(s, tenant, &all).await;
        // Hand every request its own items back, with its verdicts or the error.
        let mut all = all.into_iter();
        let mut answer = |len: usize, reply: PushReply, r| {
            let mine: Vec<PushItem> = all.by_ref().take(len).collect();
            let _ = reply.send((mine, r));
        };
        match result {
            Ok(verdicts) => {
                let mut verdicts = verdicts.into_iter();
                for (len, reply) in lens.into_iter().zip(replies) {
                    answer(len, reply, Ok(verdicts.by_ref().take(len).collect()));
                }
            }
            // Someone's data broke the fused transaction: each request on its own.
            Err(_) => {
                for (len, reply) in lens.into_iter().zip(replies) {
                    let items: Vec<PushItem> = all.by_ref().take(len).collect();
                    let r = push_transaction(s, tenant, &items).await;
                    let _ = reply.send((items, r));
                }
            }
        }
    }
}

/// One transaction: resolve (create) partitions, append, commit; then announce. Optimistic
/// first (no duplicate lookup); a duplicate voids that transaction, and it runs again
/// carefully.
async fn push_transaction(
    s: &Service,
    tenant: &str,
    items: &[PushItem],
) -> Result<Vec<Verdict>, Error> {
    if s.runtime.switches.buffering(tenant) {
        let (verdicts, written, held) = in_transaction!(s.store, |tx| {
            let buffering = maintenance::still_buffering(tx, tenant).await?;
            let prepared = prepare(tx, s, tenant, items).await?;
            let written = prepared.written(tenant);
            if buffering {
                return Ok((hold(tx, tenant, &prepared).await?, written, true));
            }
            // Maintenance ended and its buffer drained before this broker's poll saw it.
            let verdicts = append(tx, &prepared, Dedup::Careful).await?;
            Ok((verdicts, written, false))
        })?;
        if let Some(hook) = &s.abort_after_commit {
            hook.check(items, &verdicts);
        }
        s.tally_pushed(&written, &verdicts);
        if !held {
            s.announce(&written);
        }
        return Ok(verdicts);
    }
    let attempt = |dedup| async move {
        if let Some(done) = push_known(s, tenant, items, dedup).await {
            return done;
        }
        in_transaction!(s.store, |tx| {
            let prepared = prepare(tx, s, tenant, items).await?;
            let verdicts = append(tx, &prepared, dedup).await?;
            learn_places(tx, s, tenant, items, &prepared).await?;
            Ok((prepared.written(tenant), verdicts))
        })
    };
    let (written, verdicts) = match attempt(Dedup::Optimistic).await {
        Err(e) if e.is_duplicate() => attempt(Dedup::Careful).await?,
        r => r?,
    };
    if let Some(hook) = &s.abort_after_commit {
        hook.check(items, &verdicts);
    }
    s.tally_pushed(&written, &verdicts);
    s.announce(&written);
    Ok(verdicts)
}

/// Learns where the partitions just written to lie, by name too, so that this broker's next
/// fused pushes to them keep to one node.
async fn learn_places(
    tx: &Tx<'_>,
    s: &Service,
    tenant: &str,
    items: &[PushItem],
    p: &Prepared,
) -> Result<(), StoreError> {
    let places = fusion::learn_places(tx, s, p.batches.iter().map(|b| b.partition)).await?;
    if places.is_empty() {
        return Ok(());
    }
    let found: Vec<(&str, &str, Uuid, Place)> = p
        .slots
        .iter()
        .zip(&p.batches)
        .filter_map(|(slots, batch)| {
            let place = *places.get(&batch.partition)?;
            let named = &items[slots.first()?.0];
            Some((
                named.queue.as_str(),
                named.partition.as_str(),
                batch.partition,
                place,
            ))
        })
        .collect();
    s.runtime.placements.learn(tenant, &found);
    Ok(())
}

impl Service {
    /// Counts what became of each item, for `/metrics/prometheus`.
    pub(crate) fn count_outcomes(&self, verdicts: &[Verdict]) {
        for v in verdicts {
            let outcome = match v {
                Verdict::Queued { .. } => Outcome::Queued,
                Verdict::Buffered { .. } => Outcome::Buffered,
                Verdict::Duplicate { .. } => Outcome::Duplicate,
                Verdict::Failed { .. } => Outcome::PushFailed,
            };
            self.runtime.activity.ended(outcome, 1);
        }
    }

    /// Counts the items stored (or buffered) per queue for the series, once committed.
    pub(crate) fn tally_pushed(&self, written: &Announcement, verdicts: &[Verdict]) {
        let queue_of: HashMap<Uuid, Uuid> =
            written.partitions.iter().map(|&(q, p)| (p, q)).collect();
        let mut pushed: HashMap<Uuid, i64> = HashMap::new();
        for v in verdicts {
            if let Verdict::Queued { partition, .. } | Verdict::Buffered { partition, .. } = v {
                if let Some(q) = queue_of.get(partition) {
                    *pushed.entry(*q).or_default() += 1;
                }
            }
        }
        for (q, n) in pushed {
            let t = Tally {
                pushed: n,
                ..Tally::default()
            };
            self.runtime.tallies.add(q, t);
        }
    }
}

/// Items resolved to partitions, encrypted where their queue asks, deduplicated within the
/// request, framed, and grouped by partition in lock order.
pub(crate) struct Prepared {
    /// Per partition, in id order: what to append.
    batches: Vec<Batch>,
    /// Per batch, per message: its request position and its id.
    slots: Vec<Vec<(usize, Uuid)>>,
    /// Items that repeat an earlier item of the same request: (item, earlier item).
    repeats: Vec<(usize, usize)>,
    failed: Vec<(usize, String)>,
    /// The queues written to, with how many partitions of each (how many pops to wake).
    queues: Vec<(String, usize)>,
    /// (queue id, partition id) of the partitions created (their consumers should sweep).
    created: Vec<(Uuid, Uuid)>,
    /// (queue id, partition id) of every partition with messages to append.
    partitions: Vec<(Uuid, Uuid)>,
    len: usize,
    /// The deduplication window its append keeps.
    window: Window,
}

impl Prepared {
    /// What to announce once the transaction has committed.
    pub(crate) fn written(&self, tenant: &str) -> Announcement {
        Announcement {
            tenant: tenant.to_string(),
            queues: self.queues.clone(),
            created: self.created.clone(),
            partitions: self.partitions.clone(),
            reopened: Vec::new(),
            reopened_at: Vec::new(),
            ephemeral: Vec::new(),
        }
    }
}

/// A partition found or created, with whether its queue encrypts.
struct Target {
    part: PartitionRef,
    encrypted: bool,
}

/// Maps the items' (queue, partition) names to partitions inside the caller's transaction,
/// creating missing queues (defaults, derived namespace and task) and partitions first,
/// sorted by name: creation is the first step of the global lock order. Returns the
/// partitions by name and the (queue id, partition id) of those it created.
async fn resolve(
    tx: &Tx<'_>,
    tenant: &str,
    keys: &[PartitionKey],
) -> Result<(HashMap<PartitionKey, Target>, Vec<(Uuid, Uuid)>), StoreError> {
    // A fused flush names the same few partitions once per item: look each up once.
    let mut unique: Vec<&PartitionKey> = keys.iter().collect();
    unique.sort();
    unique.dedup();
    let mut found = partitions::lookup(tx, tenant, &unique).await?;
    let mut created = Vec::new();
    let missing: Vec<&PartitionKey> = unique
        .iter()
        .copied()
        .filter(|k| !found.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        let names: Vec<(String, String)> = missing
            .iter()
            .map(|(q, _)| derive_namespace_task(q))
            .collect();
        let new: Vec<NewPartition<'_>> = missing
            .iter()
            .zip(&names)
            .map(|((q, p), (namespace, task))| NewPartition {
                queue: q,
                partition: p,
                namespace,
                task,
            })
            .collect();
        created = partitions::create(tx, tenant, &new).await?;
        found = partitions::lookup(tx, tenant, &unique).await?;
    }
    let targets = found
        .into_iter()
        .map(|(k, part)| {
            let encrypted = QueueOptions::from_stored(&part.options).encrypted();
            (k, Target { part, encrypted })
        })
        .collect();
    Ok((targets, created))
}

/// Resolves the items to partitions (creating missing ones) inside the caller's transaction,
/// then frames the messages.
pub(crate) async fn prepare(
    tx: &Tx<'_>,
    s: &Service,
    tenant: &str,
    items: &[PushItem],
) -> Result<Prepared, StoreError> {
    let keys = keys_of(items);
    let (targets, created) = resolve(tx, tenant, &keys).await?;
    if tx.one_statement_paths() {
        s.runtime.known.learn(tenant, targets.iter().map(known));
    }
    Ok(prepared(s, items, &keys, &targets, created))
}

/// Each item's (queue, partition) names.
fn keys_of(items: &[PushItem]) -> Vec<PartitionKey> {
    items
        .iter()
        .map(|i| (i.queue.clone(), i.partition.clone()))
        .collect()
}

/// What the broker keeps of a partition it looked up, to push to it without a lookup.
fn known<'a>((k, t): (&'a PartitionKey, &'a Target)) -> (&'a str, &'a str, Known) {
    let known = Known {
        id: t.part.id,
        queue_id: t.part.queue_id,
        options: Arc::new(t.part.options.clone()),
    };
    (k.0.as_str(), k.1.as_str(), known)
}

/// The items' partitions as this broker knows them, if it knows every one (one PostgreSQL
/// only): a push to them needs no lookup (see [`push_known`]).
fn known_targets(
    s: &Service,
    tenant: &str,
    items: &[PushItem],
) -> Option<HashMap<PartitionKey, Target>> {
    if !s.store.one_statement_paths() {
        return None;
    }
    let names = items
        .iter()
        .map(|i| (i.queue.as_str(), i.partition.as_str()));
    let known = s.runtime.known.all_of(tenant, names)?;
    Some(
        items
            .iter()
            .zip(known)
            .map(|(i, k)| {
                let options = (*k.options).clone();
                let encrypted = QueueOptions::from_stored(&options).encrypted();
                let part = PartitionRef {
                    id: k.id,
                    name: i.partition.clone(),
                    queue_id: k.queue_id,
                    queue: i.queue.clone(),
                    options,
                };
                (
                    (i.queue.clone(), i.partition.clone()),
                    Target { part, encrypted },
                )
            })
            .collect(),
    )
}

/// The messages framed and grouped by partition, their partitions resolved to `targets`.
fn prepared(
    s: &Service,
    items: &[PushItem],
    keys: &[PartitionKey],
    targets: &HashMap<PartitionKey, Target>,
    created: Vec<(Uuid, Uuid)>,
) -> Prepared {
    let targets: Vec<&Target> = keys
        .iter()
        .map(|k| targets.get(k).expect("resolve returns every key"))
        .collect();
    let dedup_keys: Vec<(Uuid, &str)> = items
        .iter()
        .zip(&targets)
        .map(|(i, t)| (t.part.id, i.message.transaction_id.as_str()))
        .collect();
    let mut p = Prepared::new(items.len(), created, s.window());
    let mut groups = BTreeMap::new();
    for (idx, (item, rep)) in items.iter().zip(repeats(&dedup_keys)).enumerate() {
        if let Some(first) = rep {
            p.repeats.push((idx, first));
            continue;
        }
        let t = targets[idx];
        match frame(s, item, t.encrypted) {
            Ok(frame) => p.add(&mut groups, idx, item, &t.part, frame),
            Err(error) => p.failed.push((idx, error)),
        }
    }
    (p.slots, p.batches) = groups.into_values().unzip();
    p
}

/// A push to partitions this broker knows, as one statement with no transaction around it
/// (`append::append_known`): one round trip where the full way takes four (BEGIN, lookup,
/// append, COMMIT). `None` when a partition is not as known (gone, or its queue's options
/// changed): nothing was written, what was known is forgotten, and the caller goes the full
/// way.
async fn push_known(
    s: &Service,
    tenant: &str,
    items: &[PushItem],
    dedup: Dedup,
) -> Option<Result<(Announcement, Vec<Verdict>), StoreError>> {
    let targets = known_targets(s, tenant, items)?;
    let p = prepared(s, items, &keys_of(items), &targets, Vec::new());
    let options: HashMap<Uuid, _> = targets
        .values()
        .map(|t| (t.part.id, &t.part.options))
        .collect();
    let options: Vec<_> = p.batches.iter().map(|b| options[&b.partition]).collect();
    let appended = regent_store::retrying(|| async {
        let client = s.store.client().await?;
        append_known(&client, &p.batches, &options, dedup, p.window).await
    })
    .await;
    match appended {
        Err(e) if e.is_stale() => {
            let names = items
                .iter()
                .map(|i| (i.queue.as_str(), i.partition.as_str()));
            s.runtime.known.forget(tenant, names);
            None
        }
        Err(e) => Some(Err(e)),
        Ok(appended) => {
            let verdicts = verdicts(&p, appended, |message_id, partition| Verdict::Queued {
                message_id,
                partition,
            });
            Some(Ok((p.written(tenant), verdicts)))
        }
    }
}

/// Per partition while items are added: each message's request position and id, and the
/// batch to append.
type Groups = BTreeMap<Uuid, (Vec<(usize, Uuid)>, Batch)>;

impl Prepared {
    fn new(len: usize, created: Vec<(Uuid, Uuid)>, window: Window) -> Prepared {
        Prepared {
            window,
            batches: Vec::new(),
            slots: Vec::new(),
            repeats: Vec::new(),
            failed: Vec::new(),
            queues: Vec::new(),
            created,
            partitions: Vec::new(),
            len,
        }
    }

    /// Adds item `idx`, framed, to its partition's batch.
    fn add(
        &mut self,
        groups: &mut Groups,
        idx: usize,
        item: &PushItem,
        part: &PartitionRef,
        frame: Vec<u8>,
    ) {
        if !groups.contains_key(&part.id) {
            self.partitions.push((part.queue_id, part.id));
            match self.queues.iter_mut().find(|(q, _)| *q == part.queue) {
                Some((_, n)) => *n += 1,
                None => self.queues.push((part.queue.clone(), 1)),
            }
        }
        let (slots, batch) = groups.entry(part.id).or_insert_with(|| {
            let batch = Batch {
                partition: part.id,
                hashes: Vec::new(),
                frames: Vec::new(),
            };
            (Vec::new(), batch)
        });
        slots.push((idx, item.message.message_id));
        batch
            .hashes
            .push(tx_hash(part.id, &item.message.transaction_id));
        batch.frames.push(frame);
    }
}

/// The item's frame: its message as sent, or sealed when its queue encrypts.
fn frame(s: &Service, item: &PushItem, encrypted: bool) -> Result<Vec<u8>, String> {
    let m = &item.message;
    let framed = match (encrypted, &s.cipher) {
        (false, _) => frames::encode(m),
        (true, Some(c)) => frames::encode(&Message {
            payload: c.encrypt(&m.payload),
            encrypted: true,
            ..m.clone()
        }),
        (true, None) => {
            return Err(
                "queue requires encryption but the broker has no QUEEN_ENCRYPTION_KEY".into(),
            )
        }
    };
    framed.map_err(|e| e.to_string())
}

/// Appends every batch inside the caller's transaction, partitions in id order (the global
/// lock order). Returns one verdict per item.
pub(crate) async fn append(
    tx: &Tx<'_>,
    p: &Prepared,
    dedup: Dedup,
) -> Result<Vec<Verdict>, StoreError> {
    let appended = append_many(tx, &p.batches, dedup, p.window).await?;
    Ok(verdicts(p, appended, |message_id, partition| {
        Verdict::Queued {
            message_id,
            partition,
        }
    }))
}

/// Holds every batch in the push buffer instead (push maintenance), deduplicated as an
/// append is. Returns one verdict per item.
pub(crate) async fn hold(
    tx: &Tx<'_>,
    tenant: &str,
    p: &Prepared,
) -> Result<Vec<Verdict>, StoreError> {
    let held = maintenance::hold(tx, tenant, &p.batches).await?;
    Ok(verdicts(p, held, |message_id, partition| {
        Verdict::Buffered {
            message_id,
            partition,
        }
    }))
}

/// One verdict per item from what became of each batch's messages; `new` names a message
/// taken.
fn verdicts(
    p: &Prepared,
    outcomes: Vec<Vec<Appended>>,
    new: impl Fn(Uuid, Uuid) -> Verdict,
) -> Vec<Verdict> {
    let mut out: Vec<Option<Verdict>> = vec![None; p.len];
    for ((slots, batch), outcome) in p.slots.iter().zip(&p.batches).zip(outcomes) {
        for (&(idx, new_id), v) in slots.iter().zip(outcome) {
            let partition = batch.partition;
            out[idx] = Some(match v {
                Appended::New => new(new_id, partition),
                Appended::Duplicate(message_id) => Verdict::Duplicate {
                    message_id,
                    partition,
                },
            });
        }
    }
    for (idx, error) in &p.failed {
        out[*idx] = Some(Verdict::Failed {
            error: error.clone(),
        });
    }
    for &(idx, first) in &p.repeats {
        let earlier = out[first].clone().expect("an earlier item has a verdict");
        out[idx] = Some(match earlier.stored() {
            Some((message_id, partition)) => Verdict::Duplicate {
                message_id,
                partition,
            },
            None => earlier,
        });
    }
    out.into_iter()
        .map(|v| v.expect("every item has a verdict"))
        .collect()
}
