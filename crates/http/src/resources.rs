//! Inspection and administration of queues: the tenant at a glance, the queue listings, one
//! queue with its partitions, its backlog, namespaces and tasks, and deleting or clearing a
//! queue.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;

use super::answer::{Answer, Millis, Pagination, True};
use super::auth::Principal;
use super::error::ApiError;
use super::openapi::schemas::string;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::routes::{route, Entry, Level::*};
use super::State;
use regent_service::overview::{Label, Messages, Spread, THROUGHPUT_SPAN};
use regent_service::queues::{Cleared, Listing, Page, PartitionStats, QueueSummary, QueueTotals};

/// Queues and their partitions (`crate::configure` too).
pub(crate) const TAG: Tag = (
    "queues",
    "Queues and their partitions: configuration, counts, deletion, clearing.",
);

const QUEUE: &str = "/api/v1/resources/queues/{queue}";

/// The partition listing: 100 a page, at most 1,000.
const PARTITIONS: Paging = Paging {
    default: 100,
    max: 1000,
};

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    let page_only = |_: PathParams<String>, p: Params| async move {
        let _ = p.page(Paging::LISTING);
    };
    vec![
        route(M::GET, "/api/v1/resources/overview", ReadOnly, overview)
            .reads_nothing()
            .doc(op("The tenant at a glance").answers::<TenantOverview>(200, "The overview.")),
        route(M::GET, "/api/v1/resources/queues", ReadOnly, list_queues)
            .doc(
                op("List queues")
                    .query("search", string(), "Only queues whose name contains this.")
                    .paged(Paging::LISTING, "Queues")
                    .answers::<QueueList>(200, "The queues."),
            )
            .reads_request(
                &["?search=ord&limit=10&offset=20"],
                |p: Params| async move {
                    let _ = listing(&p);
                },
            ),
        route(M::GET, QUEUE, ReadOnly, get_queue)
            .doc(
                op("One queue with each partition's counts")
                    .paged(Paging::LISTING, "Partitions")
                    .fails(404, "`Queue not found`.")
                    .answers::<QueueDetail>(200, "The queue."),
            )
            .reads_request(&["orders?limit=5"], page_only),
        route(M::DELETE, QUEUE, Admin, delete_queue)
            .doc(op("Delete a queue").answers::<QueueDeleted>(200, "Deleted (or never there)."))
            .reads_request(&["orders"], |_: PathParams<String>| async {}),
        route(M::GET, "/api/v1/resources/namespaces", ReadOnly, namespaces)
            .doc(
                op("Namespaces with their counts")
                    .paged(Paging::LISTING, "Namespaces")
                    .answers::<Namespaces>(200, "The namespaces."),
            )
            .reads_request(&["?limit=10&offset=0"], |p: Params| async move {
                let _ = p.page(Paging::LISTING);
            }),
        route(M::GET, "/api/v1/resources/tasks", ReadOnly, tasks)
            .doc(
                op("Tasks with their counts")
                    .paged(Paging::LISTING, "Tasks")
                    .answers::<Tasks>(200, "The tasks."),
            )
            .reads_request(&["?limit=10&offset=0"], |p: Params| async move {
                let _ = p.page(Paging::LISTING);
            }),
        route(
            M::GET,
            "/api/v1/resources/queues/{queue}/depth",
            ReadOnly,
            queue_depth,
        )
        .doc(
            op("A queue's backlog")
                .query(
                    "group",
                    string(),
                    "The consumer group; absent: the furthest-behind cursor of each partition.",
                )
                .fails(404, "`Queue not found`.")
                .answers::<QueueDepth>(200, "The backlog."),
        )
        .reads_request(
            &["orders?group=ledger"],
            |_: PathParams<String>, p: Params| async move {
                let _ = depth_group(&p);
            },
        ),
        route(M::GET, "/api/v1/resources/partitions", ReadOnly, partitions)
            .doc(
                op("A page of partitions")
                    .query("queue", string(), "Only this queue's partitions.")
                    .paged(PARTITIONS, "Partitions")
                    .answers::<PartitionList>(200, "The page."),
            )
            .reads_request(
                &["?queue=orders&limit=100&offset=100"],
                |p: Params| async move {
                    let _ = partitions_query(&p);
                },
            ),
        route(
            M::DELETE,
            "/api/v1/queues/{queue}/clear",
            Admin,
            clear_queue,
        )
        .doc(
            op("Delete every message of a queue")
                .query("partition", string(), "Only this partition.")
                .fails(404, "`Queue not found`, `Partition not found`.")
                .answers::<QueueCleared>(200, "Cleared."),
        )
        .reads_request(
            &["orders?partition=Default"],
            |_: PathParams<String>, p: Params| async move {
                let _ = clear_partition(&p);
            },
        ),
    ]
}

/// A queue's message counts, as the listings show them.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ListedCounts {
    total: i64,
    pending: i64,
    processing: i64,
    #[serde(rename = "deadLetter")]
    dead_letter: i64,
}

/// Messages per second over the last 5 minutes of the series (the overview's span).
#[derive(Serialize, JsonSchema)]
pub(crate) struct Throughput {
    /// Pushed.
    #[serde(rename = "ingestedPerSecond")]
    ingested_per_second: f64,
    /// Passed by a cursor.
    #[serde(rename = "processedPerSecond")]
    processed_per_second: f64,
}

/// One queue of a listing, as both queue listings answer it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct QueueListed {
    id: Uuid,
    name: String,
    namespace: String,
    task: String,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    partitions: i64,
    messages: ListedCounts,
    /// A Regent extension, the overview's rates for one queue: its last 5 minutes.
    throughput: Throughput,
}

/// The span a listed queue's rates are over, in seconds (the overview's).
const RECENT_SECS: f64 = THROUGHPUT_SPAN.as_secs() as f64;

impl From<&QueueSummary> for QueueListed {
    fn from(r: &QueueSummary) -> QueueListed {
        QueueListed {
            id: r.queue.id,
            name: r.queue.name.clone(),
            namespace: r.queue.namespace.clone(),
            task: r.queue.task.clone(),
            created_at: Millis(r.queue.created_at),
            partitions: r.partitions,
            messages: ListedCounts {
                total: r.total,
                pending: r.pending,
                processing: r.processing,
                dead_letter: r.dead_letters,
            },
            throughput: Throughput {
                ingested_per_second: r.pushed_recently as f64 / RECENT_SECS,
                processed_per_second: r.completed_recently as f64 / RECENT_SECS,
            },
        }
    }
}

/// `GET /api/v1/resources/queues`.
#[derive(Serialize, JsonSchema)]
struct QueueList {
    queues: Vec<QueueListed>,
}

async fn list_queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<QueueList>, ApiError> {
    let rows = s.service.queues().list(&who.tenant, &listing(&p)).await?;
    Ok(Answer(QueueList {
        queues: rows.iter().map(QueueListed::from).collect(),
    }))
}

/// The queue listing's search and page.
pub(crate) fn listing(p: &Params) -> Listing<'_> {
    let Page { limit, offset } = p.page(Paging::LISTING);
    Listing {
        search: p.str("search"),
        limit,
        offset,
        ..Listing::default()
    }
}

/// The six counts of a partition, or of a queue over its partitions.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Counts {
    total: i64,
    pending: i64,
    /// Under a live lease.
    processing: i64,
    completed: i64,
    /// 1 while a nacked message waits for its retry.
    failed: i64,
    #[serde(rename = "deadLetter")]
    dead_letter: i64,
}

impl From<&PartitionStats> for Counts {
    fn from(p: &PartitionStats) -> Counts {
        Counts {
            total: p.total,
            pending: p.pending,
            processing: p.processing,
            completed: p.completed,
            failed: p.failed,
            dead_letter: p.dead_letters,
        }
    }
}

impl From<&QueueTotals> for Counts {
    fn from(t: &QueueTotals) -> Counts {
        Counts {
            total: t.total,
            pending: t.pending,
            processing: t.processing,
            completed: t.completed,
            failed: t.failed,
            dead_letter: t.dead_letters,
        }
    }
}

/// Seconds since a round counted it; -1 when none has.
pub(crate) fn stats_age(at: Option<DateTime<Utc>>) -> i64 {
    stats_age_secs(at.map(|t| (Utc::now() - t).num_milliseconds() as f64 / 1000.0))
}

/// Whole seconds, as Queen's `statsAge`; -1 for never.
pub(crate) fn stats_age_secs(age: Option<f64>) -> i64 {
    age.map_or(-1, |secs| secs.max(0.0).floor() as i64)
}

/// Where a page of partitions sits among all of them.
#[derive(Serialize, JsonSchema)]
pub(crate) struct PartitionPage {
    limit: i64,
    offset: i64,
    /// Partitions of the queue, from the stats snapshot.
    total: i64,
}

impl PartitionPage {
    pub(crate) fn of(page: Page, total: i64) -> PartitionPage {
        PartitionPage {
            limit: page.limit,
            offset: page.offset,
            total,
        }
    }
}

/// One partition of a queue's page, counted now.
#[derive(Serialize, JsonSchema)]
struct PartitionDetail {
    id: Uuid,
    name: String,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    stats: Counts,
    #[serde(rename = "oldestMessage")]
    oldest_message: Option<Millis>,
    #[serde(rename = "newestMessage")]
    newest_message: Option<Millis>,
}

/// `GET /api/v1/resources/queues/:queue`.
#[derive(Serialize, JsonSchema)]
struct QueueDetail {
    id: Uuid,
    name: String,
    namespace: String,
    task: String,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    partitions: Vec<PartitionDetail>,
    totals: Counts,
    pagination: PartitionPage,
    /// Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before
    /// the first.
    #[serde(rename = "statsAge")]
    stats_age: i64,
}

/// `Admin.get_queue`: the queue, a page of its partitions with their counts counted now
/// (each the largest over consumer groups; `failed` is 1 while a group's next message waits
/// for the retry of a nack), and `totals` over every partition from the stats snapshot.
async fn get_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Answer<QueueDetail>, ApiError> {
    let page = p.page(Paging::LISTING);
    let Some(d) = s.service.queues().detail(&who.tenant, &queue, page).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let partitions = d
        .partitions
        .iter()
        .map(|p| PartitionDetail {
            id: p.id,
            name: p.name.clone(),
            created_at: Millis(p.created_at),
            stats: Counts::from(p),
            oldest_message: p.oldest.map(Millis),
            newest_message: p.newest.map(Millis),
        })
        .collect();
    let q = d.row;
    Ok(Answer(QueueDetail {
        id: q.id,
        name: q.name,
        namespace: q.namespace,
        task: q.task,
        created_at: Millis(q.created_at),
        partitions,
        totals: Counts::from(&d.totals),
        pagination: PartitionPage::of(page, d.totals.partitions),
        stats_age: stats_age(d.totals.refreshed_at),
    }))
}

/// `GET /api/v1/resources/queues/:queue/depth`.
#[derive(Serialize, JsonSchema)]
struct QueueDepth {
    /// Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before
    /// the first.
    #[serde(rename = "statsAge")]
    stats_age: i64,
    queue: String,
    group: Option<String>,
    pending: i64,
    #[serde(rename = "partitionsPending")]
    partitions_pending: i64,
    #[schemars(extend("const" = false))]
    conflation: bool,
    #[serde(rename = "effectivePending")]
    effective_pending: i64,
    partitions: Vec<PartitionPending>,
}

#[derive(Serialize, JsonSchema)]
struct PartitionPending {
    partition: String,
    pending: i64,
}

/// The depth route's consumer group, if one is named.
fn depth_group(p: &Params) -> Option<&str> {
    p.str("group").filter(|g| !g.is_empty())
}

/// `Admin.get_queue_depth`: a queue's backlog for one consumer group (`?group=`), or for its
/// furthest-behind cursors, from the stats snapshot. Regent does not conflate deliveries,
/// so the work left is the backlog itself (`effectivePending` = `pending`). The partitions
/// listed are the 100 with the most pending, most first.
async fn queue_depth(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Answer<QueueDepth>, ApiError> {
    let group = depth_group(&p);
    let Some(d) = s.service.queues().depth(&who.tenant, &queue, group).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    // A group no round has seen on the queue is counted now.
    let counted_now = group.is_some() && d.refreshed_at.is_none();
    Ok(Answer(QueueDepth {
        stats_age: if counted_now {
            0
        } else {
            stats_age(d.refreshed_at)
        },
        queue,
        group: group.map(str::to_string),
        pending: d.pending,
        partitions_pending: d.partitions_pending,
        conflation: false,
        effective_pending: d.pending,
        partitions: d
            .top
            .into_iter()
            .map(|(partition, pending)| PartitionPending { partition, pending })
            .collect(),
    }))
}

/// What a queue deletion did.
#[derive(Serialize, JsonSchema)]
struct QueueDeleted {
    deleted: True,
    queue: String,
    existed: bool,
}

/// Idempotent: deleting a queue that does not exist answers `existed: false`.
async fn delete_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
) -> Result<Answer<QueueDeleted>, ApiError> {
    let existed = s.service.queues().delete(&who.tenant, &queue).await?;
    Ok(Answer(QueueDeleted {
        deleted: True,
        queue,
        existed,
    }))
}

/// Five of the six counts, as the partition listing and the status routes show them.
#[derive(Serialize, JsonSchema)]
pub(crate) struct MessageCounts {
    total: i64,
    pending: i64,
    processing: i64,
    completed: i64,
    failed: i64,
}

impl From<&Messages> for MessageCounts {
    fn from(m: &Messages) -> MessageCounts {
        MessageCounts {
            total: m.total,
            pending: m.pending,
            processing: m.processing,
            completed: m.completed,
            failed: m.failed,
        }
    }
}

/// The spread of one lag over the tenant's cursors.
#[derive(Serialize, JsonSchema)]
struct LagSpread {
    avg: f64,
    median: f64,
    min: f64,
    max: f64,
}

impl From<&Spread> for LagSpread {
    fn from(s: &Spread) -> LagSpread {
        LagSpread {
            avg: s.avg,
            median: s.median,
            min: s.min,
            max: s.max,
        }
    }
}

#[derive(Serialize, JsonSchema)]
struct Lag {
    /// Seconds.
    time: LagSpread,
    /// Messages.
    offset: LagSpread,
}

/// `GET /api/v1/resources/overview`.
#[derive(Serialize, JsonSchema)]
struct TenantOverview {
    queues: i64,
    partitions: i64,
    namespaces: i64,
    tasks: i64,
    messages: Counts,
    lag: Lag,
    throughput: Throughput,
    timestamp: Millis,
    /// Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before
    /// the first.
    #[serde(rename = "statsAge")]
    stats_age: i64,
}

/// `Admin.get_overview`: the tenant's queues, partitions and messages at a glance, from the
/// stats snapshot (`statsAge` seconds old); throughput is the last 5 minutes of the series.
async fn overview(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<TenantOverview>, ApiError> {
    let (o, t) = s.service.overview(&who.tenant).await?;
    let m = &o.messages;
    Ok(Answer(TenantOverview {
        queues: o.queues,
        partitions: o.partitions,
        namespaces: o.namespaces,
        tasks: o.tasks,
        messages: Counts {
            total: m.total,
            pending: m.pending,
            processing: m.processing,
            completed: m.completed,
            failed: m.failed,
            dead_letter: o.dead_letters,
        },
        lag: Lag {
            time: LagSpread::from(&o.time_lag),
            offset: LagSpread::from(&o.offset_lag),
        },
        throughput: Throughput {
            ingested_per_second: t.ingested,
            processed_per_second: t.processed,
        },
        timestamp: Millis(Utc::now()),
        stats_age: stats_age_secs(o.stats_age),
    }))
}

/// A namespace's or a task's counts.
#[derive(Serialize, JsonSchema)]
struct Rolled {
    queues: i64,
    partitions: i64,
    messages: Backlog,
}

#[derive(Serialize, JsonSchema)]
struct Backlog {
    total: i64,
    pending: i64,
}

#[derive(Serialize, JsonSchema)]
struct Namespace {
    namespace: String,
    #[serde(flatten)]
    counts: Rolled,
}

#[derive(Serialize, JsonSchema)]
struct Task {
    task: String,
    #[serde(flatten)]
    counts: Rolled,
}

/// `GET /api/v1/resources/namespaces`.
#[derive(Serialize, JsonSchema)]
struct Namespaces {
    namespaces: Vec<Namespace>,
}

/// `GET /api/v1/resources/tasks`.
#[derive(Serialize, JsonSchema)]
struct Tasks {
    tasks: Vec<Task>,
}

/// A page (`limit` 1,000, `offset`) of the tenant's namespaces or tasks, by name, each with
/// its name and counts.
async fn rollup(
    s: &super::AppState,
    tenant: &str,
    by: Label,
    p: &Params,
) -> Result<Vec<(String, Rolled)>, ApiError> {
    let rows = s
        .service
        .rollup(tenant, by, p.page(Paging::LISTING))
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let counts = Rolled {
                queues: r.queues,
                partitions: r.partitions,
                messages: Backlog {
                    total: r.messages.total,
                    pending: r.messages.pending,
                },
            };
            (r.name, counts)
        })
        .collect())
}

async fn namespaces(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Namespaces>, ApiError> {
    let rows = rollup(&s, &who.tenant, Label::Namespace, &p).await?;
    let namespaces = rows
        .into_iter()
        .map(|(namespace, counts)| Namespace { namespace, counts });
    Ok(Answer(Namespaces {
        namespaces: namespaces.collect(),
    }))
}

async fn tasks(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Tasks>, ApiError> {
    let rows = rollup(&s, &who.tenant, Label::Task, &p).await?;
    let tasks = rows.into_iter().map(|(task, counts)| Task { task, counts });
    Ok(Answer(Tasks {
        tasks: tasks.collect(),
    }))
}

/// The partition listing's queue (`None`: every queue) and page.
fn partitions_query(p: &Params) -> (Option<&str>, Page) {
    (p.str("queue").filter(|q| !q.is_empty()), p.page(PARTITIONS))
}

/// One partition of the partition listing.
#[derive(Serialize, JsonSchema)]
struct PartitionListed {
    id: Uuid,
    name: String,
    queue: String,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    /// Its last push.
    #[serde(rename = "lastActivity")]
    last_activity: Option<Millis>,
    messages: MessageCounts,
}

/// `GET /api/v1/resources/partitions`.
#[derive(Serialize, JsonSchema)]
struct PartitionList {
    partitions: Vec<PartitionListed>,
    total: i64,
    pagination: Pagination,
}

/// `Admin.get_partitions`: a page of partitions (`?queue=`, `limit` 100 by default, at most
/// 1,000, `offset`), by queue then partition name, with `total`.
async fn partitions(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<PartitionList>, ApiError> {
    let (queue, page) = partitions_query(&p);
    let (rows, total) = s
        .service
        .partitions(&who.tenant, queue, page.limit, page.offset)
        .await?;
    Ok(Answer(PartitionList {
        partitions: rows
            .into_iter()
            .map(|p| PartitionListed {
                messages: MessageCounts::from(&p.messages),
                id: p.id,
                name: p.name,
                queue: p.queue,
                created_at: Millis(p.created_at),
                last_activity: p.last_push_at.map(Millis),
            })
            .collect(),
        total,
        pagination: Pagination::from(page),
    }))
}

/// What a clear deleted.
#[derive(Serialize, JsonSchema)]
struct QueueCleared {
    success: True,
    queue: String,
    partition: Option<String>,
    /// Messages deleted.
    deleted: i64,
}

/// The clear route's partition, if one is named.
fn clear_partition(p: &Params) -> Option<&str> {
    p.str("partition").filter(|p| !p.is_empty())
}

/// `Admin.clear_queue`: every message of the queue (or of `?partition=`) deleted, its
/// cursors moved to the end with their leases released. Dead letters and the transaction
/// index stay (docs/api.md, "Single messages").
async fn clear_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Answer<QueueCleared>, ApiError> {
    let partition = clear_partition(&p);
    match s
        .service
        .queues()
        .clear(&who.tenant, &queue, partition)
        .await?
    {
        Cleared::NoQueue => Err(ApiError::NotFound("Queue not found".into())),
        Cleared::NoPartition => Err(ApiError::NotFound("Partition not found".into())),
        Cleared::Deleted(n) => Ok(Answer(QueueCleared {
            success: True,
            queue,
            partition: partition.map(str::to_string),
            deleted: n,
        })),
    }
}
