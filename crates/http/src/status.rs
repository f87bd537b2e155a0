//! `/api/v1/status/*` (spec §13.1–13.5): what Queen's dashboard pages read, from the queue
//! series and the current counts. Fields Queen fills from machinery Regent does not have (an
//! event loop, worker slots, a stats refresh) are `null`, never invented (docs/api.md, "Differences from Queen").

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::answer::{Answer, Millis, Null, Pagination};
use super::auth::Principal;
use super::configure::OptionsEcho;
use super::error::ApiError;
use super::messages::MessageAt;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::resources::{stats_age, stats_age_secs, Counts, PartitionPage, QueueListed};
use super::routes::{route, Entry, Level::*};
use super::time::{TimeRange, WindowQuery};
use super::State;
use regent_rules::message_status::Status;
use regent_rules::options::QueueOptions;
use regent_service::messages::{Found, ListQuery, Scope};
use regent_service::overview::{Counts as SeriesCounts, Filter, Messages};
use regent_service::queues::Listing;
use regent_service::status::Window;

const TAG: Tag = (
    "status",
    "What Queen's dashboard pages read, from the per-minute queue series and the current counts. Fields Queen fills from machinery Regent does not have (an event loop, worker slots, a stats refresh) are null, never invented.",
);

/// The queue statistics page 100 queues by default, at most 1,000.
const QUEUE_STATS: Paging = Paging {
    default: 100,
    max: 1000,
};

/// A queue's messages, 50 a page by default, at most 1,000.
const QUEUE_MESSAGES: Paging = Paging {
    default: 50,
    max: 1000,
};

/// What a window of [`window`] refuses.
pub(crate) const WINDOW_FAILS: &str = "`from must be before to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.";

/// A window and a filter, for the fuzzer.
pub(crate) const WINDOW_SEED: &str =
    "?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00.5%2B01:00&queue=q&namespace=n&task=t";

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::GET, "/api/v1/status", ReadOnly, status)
            .doc(
                op("Throughput, leases and dead letters over a window")
                    .query_of::<WindowQuery<1>>()
                    .query_of::<QueueFilter>()
                    .fails(400, WINDOW_FAILS)
                    .answers::<StatusAnswer>(200, "The status."),
            )
            .reads_request(&[WINDOW_SEED], |p: Params| async move {
                series_query::<1>(&p).map(drop)
            }),
        route(M::GET, "/api/v1/status/queues", ReadOnly, queues)
            .doc(
                op("A page of queues")
                    .query_of::<QueuesQuery>()
                    .paged(QUEUE_STATS, "Queues")
                    .answers::<QueueStats>(200, "The page."),
            )
            .reads_request(
                &["?namespace=n&task=t&limit=100&offset=0"],
                |p: Params| async move { queues_listing(&p).map(drop) },
            ),
        route(M::GET, "/api/v1/status/queues/{queue}", ReadOnly, queue)
            .doc(
                op("One queue's page")
                    .paged(Paging::LISTING, "Partitions")
                    .fails(404, "`Queue not found`.")
                    .answers::<QueuePage>(200, "The queue."),
            )
            .reads_request(
                &["orders?limit=5"],
                |_: PathParams<String>, p: Params| async move {
                    let _ = p.page(Paging::LISTING);
                },
            ),
        route(
            M::GET,
            "/api/v1/status/queues/{queue}/messages",
            ReadOnly,
            queue_messages,
        )
        .doc(
            op("A queue's messages, newest first")
                .paged(QUEUE_MESSAGES, "Messages")
                .answers::<Vec<QueueMessage>>(200, "The messages."),
        )
        .reads_request(
            &["orders?limit=50&offset=50"],
            |PathParams(q): PathParams<String>, p: Params| async move {
                let _ = queue_messages_query(&q, &p, Utc::now());
            },
        ),
        route(M::GET, "/api/v1/status/analytics", ReadOnly, analytics)
            .doc(
                op("Messages pushed per interval")
                    .query_of::<WindowQuery<24>>()
                    .query_of::<QueueFilter>()
                    .fails(400, WINDOW_FAILS)
                    .query_of::<IntervalQuery>()
                    .answers::<PushedSeries>(200, "The series."),
            )
            .reads_request(
                &["?interval=minute&from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z&queue=q"],
                |p: Params| async move { analytics_query(&p).map(drop) },
            ),
    ]
}

/// `queue`, `namespace`, `task` as [`filter`] reads them.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct QueueFilter<'a> {
    /// Only this queue.
    #[serde(borrow)]
    queue: Option<&'a str>,
    /// Only this namespace's queues.
    #[serde(borrow)]
    namespace: Option<&'a str>,
    /// Only this task's queues.
    #[serde(borrow)]
    task: Option<&'a str>,
}

/// A page of queues' filter, as [`queues_listing`] reads it.
#[derive(Deserialize, JsonSchema)]
struct QueuesQuery<'a> {
    /// Only this namespace.
    #[serde(borrow)]
    namespace: Option<&'a str>,
    /// Only this task.
    #[serde(borrow)]
    task: Option<&'a str>,
}

/// The analytics' bucket width, as [`analytics_query`] reads it.
#[derive(Deserialize, JsonSchema)]
struct IntervalQuery<'a> {
    /// Bucket width; any other value is `hour`.
    #[serde(borrow)]
    #[schemars(extend("enum" = ["minute", "hour", "day"], "default" = "hour"))]
    interval: Option<&'a str>,
}

/// Only `queue`, or a `namespace`'s or `task`'s queues, when sent.
fn filter(p: &Params) -> Result<Filter<'_>, ApiError> {
    let QueueFilter {
        queue,
        namespace,
        task,
    } = p.read()?;
    Ok(Filter {
        queue,
        namespace,
        task,
    })
}

/// `from`/`to` as sent, else `to` now and `from` `HOURS` before it.
fn window<const HOURS: u32>(p: &Params, bucket: Option<i32>) -> Result<Window, ApiError> {
    let q: WindowQuery<HOURS> = p.read()?;
    let to = q.to.get()?.unwrap_or_else(Utc::now);
    let from = q.from.get()?.unwrap_or(to - Duration::hours(HOURS.into()));
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    Ok(Window::new(from, to, bucket))
}

/// What a route of the queue series reads: its filter, and its window (`HOURS` long when
/// `from` is not sent).
pub(crate) fn series_query<const HOURS: u32>(p: &Params) -> Result<(Filter<'_>, Window), ApiError> {
    Ok((filter(p)?, window::<HOURS>(p, None)?))
}

/// `GET /api/v1/status`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StatusAnswer {
    time_range: TimeRange,
    /// Up to 1 h: 1; 6 h: 5; 24 h: 15; 7 d: 60; else 360.
    bucket_minutes: i32,
    point_count: i64,
    /// Newest bucket first.
    throughput: Vec<ThroughputPoint>,
    /// A Regent extension: the tenant's backlog as the stats rounds counted it, newest bucket
    /// first, each bucket's latest minute with a round; with `queue`, the queue's. `null` when
    /// filtered by namespace or task: it is kept per tenant and per queue only.
    depth: Option<Vec<DepthPoint>>,
    queues: Vec<QueueShare>,
    messages: StatusMessages,
    leases: LeasesNow,
    dead_letter_queue: DeadLetterSummary,
    /// Always empty: Regent has no workers.
    workers: [Null; 0],
    errors: StatusErrors,
    /// Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the
    /// first.
    stats_age: i64,
}

/// One bucket of the status's throughput. Queen's event-loop, slot, CPU, memory, pool and
/// error figures per bucket are null: Regent measures none of them per bucket.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ThroughputPoint {
    /// The bucket's start.
    timestamp: Millis,
    /// Messages pushed.
    ingested: i64,
    /// Messages passed by a cursor (acked, dead-lettered, dropped or auto-acked).
    processed: i64,
    /// Messages delivered.
    pop_messages: i64,
    ingested_per_second: f64,
    processed_per_second: f64,
    pop_per_second: f64,
    /// Nacks.
    ack_failed: i64,
    /// Dead letters filed.
    dlq_count: i64,
    /// Messages deleted by retention or eviction.
    expired: i64,
    #[serde(flatten)]
    unmeasured: PointUnmeasured,
}

/// Queen's figures of a point that Regent does not measure per bucket: always null.
#[derive(Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PointUnmeasured {
    avg_lag_ms: Null,
    max_lag_ms: Null,
    avg_event_loop_lag_ms: Null,
    max_event_loop_lag_ms: Null,
    min_free_slots: Null,
    db_errors: Null,
    queen_cpu_user_pct: Null,
    queen_cpu_sys_pct: Null,
    queen_rss_mb: Null,
    db_pool_active: Null,
    db_pool_idle: Null,
    db_pool_size: Null,
}

impl ThroughputPoint {
    fn new(at: DateTime<Utc>, c: &SeriesCounts, w: &Window) -> ThroughputPoint {
        let secs = (w.bucket_minutes as f64) * 60.0;
        ThroughputPoint {
            timestamp: Millis(at),
            ingested: c.pushed,
            processed: c.completed,
            pop_messages: c.delivered,
            ingested_per_second: c.pushed as f64 / secs,
            processed_per_second: c.completed as f64 / secs,
            pop_per_second: c.delivered as f64 / secs,
            ack_failed: c.failed,
            dlq_count: c.dead_lettered,
            expired: c.expired,
            unmeasured: PointUnmeasured::default(),
        }
    }
}

/// The backlog of one bucket, as the stats rounds counted it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DepthPoint {
    timestamp: Millis,
    /// Messages after each partition's furthest-behind cursor.
    pending: i64,
    processing: i64,
    dead_letter: i64,
    /// Messages behind every (partition, consumer group) cursor, summed.
    lag_messages: i64,
    /// Age of the oldest message a cursor has not read.
    max_time_lag_seconds: f64,
}

/// One queue's share of the window.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueShare {
    id: Uuid,
    name: String,
    namespace: String,
    task: String,
    partitions: i64,
    /// Passed by a cursor in the window.
    total_consumed: i64,
}

/// The messages now. Queen's request and batch counters are null: Regent keeps neither.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StatusMessages {
    total: i64,
    pending: i64,
    processing: i64,
    completed: i64,
    failed: i64,
    dead_letter: i64,
    requests: NullPerOp,
    batch_efficiency: NullPerOp,
}

/// A counter per operation that Regent does not keep.
#[derive(Serialize, JsonSchema)]
struct NullPerOp {
    push: Null,
    pop: Null,
    ack: Null,
}

const NULL_PER_OP: NullPerOp = NullPerOp {
    push: Null,
    pop: Null,
    ack: Null,
};

/// The live leases now.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct LeasesNow {
    active: i64,
    partitions_with_leases: i64,
    /// Messages under live leases.
    total_batch_size: i64,
    /// Passed by a cursor in the window.
    total_acked: i64,
}

/// The dead letters now.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DeadLetterSummary {
    total_messages: i64,
    affected_partitions: i64,
    /// The five commonest reasons.
    top_errors: Vec<TopError>,
}

#[derive(Serialize, JsonSchema)]
struct TopError {
    error: String,
    count: i64,
}

/// The window's failures.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct StatusErrors {
    db_errors: Null,
    ack_failed: i64,
    dlq_messages: i64,
}

/// `Admin.get_status`: the window's throughput (newest bucket first), each queue's share,
/// and the counts, leases and dead letters now.
async fn status(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<StatusAnswer>, ApiError> {
    let (filter, w) = series_query::<1>(&p)?;
    let st = s.service.status(&who.tenant, &filter, w).await?;
    let sum = |f: fn(&SeriesCounts) -> i64| st.points.iter().map(|(_, c)| f(c)).sum::<i64>();
    let Messages {
        total,
        pending,
        processing,
        completed,
        failed,
    } = st.now.messages;
    Ok(Answer(StatusAnswer {
        time_range: TimeRange::new(w.from, w.to),
        bucket_minutes: w.bucket_minutes,
        point_count: w.points(),
        throughput: st
            .points
            .iter()
            .map(|(at, c)| ThroughputPoint::new(*at, c, &w))
            .collect(),
        depth: st.depth.as_ref().map(|points| {
            points
                .iter()
                .map(|d| DepthPoint {
                    timestamp: Millis(d.at),
                    pending: d.pending,
                    processing: d.processing,
                    dead_letter: d.dead_letters,
                    lag_messages: d.lag_messages,
                    max_time_lag_seconds: d.max_time_lag,
                })
                .collect()
        }),
        queues: st
            .queues
            .iter()
            .map(|q| QueueShare {
                id: q.id,
                name: q.name.clone(),
                namespace: q.namespace.clone(),
                task: q.task.clone(),
                partitions: q.partitions,
                total_consumed: q.counts.completed,
            })
            .collect(),
        messages: StatusMessages {
            total,
            pending,
            processing,
            completed,
            failed,
            dead_letter: st.now.dead_letters,
            requests: NULL_PER_OP,
            batch_efficiency: NULL_PER_OP,
        },
        leases: LeasesNow {
            active: st.leases.active,
            partitions_with_leases: st.leases.partitions,
            total_batch_size: st.leases.messages,
            total_acked: sum(|c| c.completed),
        },
        dead_letter_queue: DeadLetterSummary {
            total_messages: st.dead.total,
            affected_partitions: st.dead.partitions,
            top_errors: st
                .dead
                .top_errors
                .iter()
                .map(|(error, count)| TopError {
                    error: error.clone(),
                    count: *count,
                })
                .collect(),
        },
        workers: [],
        errors: StatusErrors {
            db_errors: Null,
            ack_failed: sum(|c| c.failed),
            dlq_messages: sum(|c| c.dead_lettered),
        },
        stats_age: stats_age_secs(st.now.stats_age),
    }))
}

/// The queue statistics' namespace, task and page.
fn queues_listing(p: &Params) -> Result<Listing<'_>, ApiError> {
    let QueuesQuery { namespace, task } = p.read()?;
    let page = p.page(QUEUE_STATS);
    Ok(Listing {
        search: None,
        namespace,
        task,
        limit: page.limit,
        offset: page.offset,
    })
}

/// `GET /api/v1/status/queues`.
#[derive(Serialize, JsonSchema)]
struct QueueStats {
    queues: Vec<QueueListed>,
    pagination: Pagination,
}

/// `Admin.get_queue_stats`: a page of queues (`namespace`, `task`, `limit` 100, `offset`).
async fn queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<QueueStats>, ApiError> {
    let listing = queues_listing(&p)?;
    let rows = s.service.queues().list(&who.tenant, &listing).await?;
    Ok(Answer(QueueStats {
        queues: rows.iter().map(QueueListed::from).collect(),
        pagination: Pagination {
            limit: listing.limit,
            offset: listing.offset,
        },
    }))
}

/// `GET /api/v1/status/queues/:queue`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueuePage {
    queue: QueueInfo,
    partitions: Vec<PartitionDetail>,
    totals: QueueTotalsNow,
    pagination: PartitionPage,
    /// Seconds since a stats round counted these figures (`STATS_INTERVAL_MS`); -1 before the
    /// first.
    stats_age: i64,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueInfo {
    id: Uuid,
    name: String,
    namespace: String,
    task: String,
    priority: i64,
    created_at: Millis,
    config: QueueConfig,
    /// A Regent extension: every option with its effective value, exactly as
    /// `POST /api/v1/configure` echoes them, so a client editing one option can send the
    /// others back unchanged.
    options: OptionsEcho,
}

/// The queue's configuration in Queen's names for this page.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueConfig {
    lease_time: i64,
    retry_limit: i32,
    retry_delay: i64,
    ttl: i64,
    /// `maxSize` of configure (Queen's name here).
    max_queue_size: i64,
    /// Whether exhausted messages are dead-lettered (the tri-state decided).
    dead_letter_queue: bool,
}

/// One partition, counted now.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PartitionDetail {
    id: Uuid,
    name: String,
    created_at: Millis,
    messages: Counts,
    /// The same counts as `messages`.
    stats: Counts,
    cursor: CursorTotals,
    last_activity: Option<Millis>,
    oldest_message: Option<Millis>,
    newest_message: Option<Millis>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CursorTotals {
    total_consumed: i64,
    batches_consumed: Null,
}

/// The six counts over every partition from the stats snapshot, and again under `messages`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueTotalsNow {
    #[serde(flatten)]
    counts: Counts,
    messages: Counts,
}

/// `Admin.get_queue_detail`: the queue, its configuration, a page of its partitions
/// counted now and its totals from the stats snapshot.
async fn queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Answer<QueuePage>, ApiError> {
    let page = p.page(Paging::LISTING);
    let Some(d) = s.service.queues().detail(&who.tenant, &name, page).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let (q, o) = (&d.row, QueueOptions::from_stored(&d.row.options));
    let partitions = d
        .partitions
        .iter()
        .map(|p| PartitionDetail {
            id: p.id,
            name: p.name.clone(),
            created_at: Millis(p.created_at),
            messages: Counts::from(p),
            stats: Counts::from(p),
            cursor: CursorTotals {
                total_consumed: p.completed,
                batches_consumed: Null,
            },
            last_activity: p.newest.map(Millis),
            oldest_message: p.oldest.map(Millis),
            newest_message: p.newest.map(Millis),
        })
        .collect();
    Ok(Answer(QueuePage {
        queue: QueueInfo {
            id: q.id,
            name: q.name.clone(),
            namespace: q.namespace.clone(),
            task: q.task.clone(),
            priority: o.priority(),
            created_at: Millis(q.created_at),
            config: QueueConfig {
                lease_time: o.lease_seconds(),
                retry_limit: o.retry_limit(),
                retry_delay: o.retry_delay_ms(),
                ttl: o.ttl_seconds(),
                max_queue_size: o.max_size(),
                dead_letter_queue: o.dead_letter_enabled(),
            },
            options: OptionsEcho::of(&o),
        },
        partitions,
        totals: QueueTotalsNow {
            counts: Counts::from(&d.totals),
            messages: Counts::from(&d.totals),
        },
        pagination: PartitionPage::of(page, d.totals.partitions),
        stats_age: stats_age(d.totals.refreshed_at),
    }))
}

/// One message of `GET /api/v1/status/queues/:queue/messages`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueMessage {
    #[serde(flatten)]
    at: MessageAt,
    /// As queue mode's cursor sees it: dead-lettered, else by its cursor.
    #[schemars(extend("enum" = ["pending", "processing", "completed", "dead_letter"]))]
    status: &'static str,
    created_at: Millis,
}

impl From<&Found> for QueueMessage {
    fn from(f: &Found) -> QueueMessage {
        QueueMessage {
            at: MessageAt::of(f),
            status: queue_view(f),
            created_at: Millis(f.message.created_at),
        }
    }
}

/// A message's status as queue mode sees it: dead-lettered, else by its cursor.
fn queue_view(f: &Found) -> &'static str {
    match f.dead {
        Some(_) => Status::DeadLetter.name(),
        None => f.seen.queue_status.name(),
    }
}

/// The queue's messages up to `now`, a page (`limit` 50, `offset`).
fn queue_messages_query<'a>(name: &'a str, p: &Params, now: DateTime<Utc>) -> ListQuery<'a> {
    let page = p.page(QUEUE_MESSAGES);
    ListQuery {
        scope: Scope {
            queue: Some(name),
            partition: None,
            namespace: None,
            task: None,
            from: DateTime::<Utc>::UNIX_EPOCH,
            to: now,
        },
        status: None,
        limit: page.limit,
        offset: page.offset,
    }
}

/// A top-level array, newest first, with the status queue mode's cursor gives each message
/// (`limit` 50, `offset`).
async fn queue_messages(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Answer<Vec<QueueMessage>>, ApiError> {
    let q = queue_messages_query(&name, &p, Utc::now());
    let found = s.service.messages().list(&who.tenant, &q).await?;
    Ok(Answer(found.iter().map(QueueMessage::from).collect()))
}

/// `GET /api/v1/status/analytics`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PushedSeries {
    data_points: Vec<PushedPoint>,
    #[schemars(extend("enum" = ["minute", "hour", "day"]))]
    interval: &'static str,
    from: Millis,
    to: Millis,
}

/// Messages pushed in one bucket.
#[derive(Serialize, JsonSchema)]
struct PushedPoint {
    /// The bucket's start.
    timestamp: Millis,
    messages: i64,
}

/// The analytics' filter, bucket name and window.
fn analytics_query(p: &Params) -> Result<(Filter<'_>, &'static str, Window), ApiError> {
    let (interval, minutes) = match p.read::<IntervalQuery>()?.interval {
        Some("minute") => ("minute", 1),
        Some("day") => ("day", 1440),
        _ => ("hour", 60),
    };
    let w = window::<24>(p, Some(minutes))?;
    Ok((filter(p)?, interval, w))
}

/// `Admin.get_analytics`: messages pushed per bucket (`interval` minute, hour (default) or
/// day) over the window (the last 24 hours by default).
async fn analytics(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<PushedSeries>, ApiError> {
    let (filter, interval, w) = analytics_query(&p)?;
    let points = s.service.series(&who.tenant, &filter, w, false).await?;
    Ok(Answer(PushedSeries {
        data_points: points
            .iter()
            .map(|(at, _, c)| PushedPoint {
                timestamp: Millis(*at),
                messages: c.pushed,
            })
            .collect(),
        interval,
        from: Millis(w.from),
        to: Millis(w.to),
    }))
}
