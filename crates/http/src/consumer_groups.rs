//! Consumer groups: what each is doing on each queue; seek a group's cursors to the end of a
//! queue (skip its backlog) or back to an instant (replay), on the whole queue or one
//! partition; delete a group, on every queue or one.

use axum::extract::State as AxState;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::answer::{Answer, Millis, Null, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::{self, Flag, Paging, Params};
use super::path::PathParams;
use super::read;
use super::routes::{route, Entry, Level::*};
use super::{AppState, State};
use regent_rules::bounds::MAX_SPAN_SECONDS;
use regent_rules::group_state::group_state;
use regent_service::groups::{GroupOnQueue, Lagging, PartitionLag, Seek, SeekTo};
use regent_service::queues::Page;

const TAG: Tag = (
    "consumer groups",
    "What each group is doing on each queue; seeking its cursors (skip or replay); deleting it.",
);

const GROUP: &str = "/api/v1/consumer-groups/{group}";

/// The lagging listing pages at most 1,000 cursors: the stats snapshot keeps no more.
const LAGGING: Paging = Paging {
    default: 1000,
    max: 1000,
};

/// The groups listed, as [`list_query`] reads them.
#[derive(Deserialize, JsonSchema)]
struct ListFilter<'a> {
    /// Only this queue's groups (a Regent extension).
    #[serde(borrow)]
    queue: Option<&'a str>,
    /// Only groups whose name contains this (a Regent extension).
    #[serde(borrow)]
    search: Option<&'a str>,
}

/// The lag threshold, as [`lagging_query`] reads it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct LaggingQuery {
    /// The threshold in seconds.
    #[serde(default, deserialize_with = "seconds")]
    #[schemars(with = "f64", range(min = 0), extend("default" = 3600))]
    min_lag_seconds: Option<f64>,
}

/// A group's deletion, as [`delete_metadata`] reads it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DeleteQuery {
    /// Also forget the group's stored start point (its next pop starts it afresh); only
    /// `true` or `1` are true, so anything else sent keeps it.
    #[serde(default = "params::yes", deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "true"))]
    delete_metadata: bool,
}

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::GET, "/api/v1/consumer-groups", ReadOnly, list)
            .doc(op("Consumer groups on each queue")
                .query_of::<ListFilter>()
                .paged(Paging::LISTING, "(Group, queue) pairs")
                .answers::<Vec<GroupAnswer>>(200, "The groups."))
            .reads_request(&["?queue=orders&search=led&limit=10"], |p: Params| async move {
                let _ = list_query(&p);
            }),
        route(M::GET, "/api/v1/consumer-groups/lagging", ReadOnly, lagging)
            .doc(op("Cursors lagging past a threshold")
                .query_of::<LaggingQuery>()
                .paged(LAGGING, "Cursors")
                .fails(400, "`minLagSeconds must be a non-negative number, got '<v>'`.")
                .answers::<Vec<LaggingCursor>>(200, "The lagging cursors."))
            .reads_request(&["?minLagSeconds=60.5&limit=10&offset=5"], |p: Params| async move {
                lagging_query(&p).map(drop)
            }),
        route(M::GET, GROUP, ReadOnly, detail)
            .doc(op("One group's cursors, by queue")
                .paged(Paging::LISTING, "Cursors")
                .answers::<GroupDetail>(200, "The cursors by queue."))
            .reads_request(&["ledger?limit=10"], |_: PathParams<String>, p: Params| async move {
                let _ = p.page(Paging::LISTING);
            }),
        route(M::DELETE, GROUP, Admin, delete)
            .doc(op("Delete a group on every queue")
                .query_of::<DeleteQuery>()
                .answers::<GroupDeleted>(200, "Deleted."))
            .reads_request(&["ledger?deleteMetadata=true"], |_: PathParams<String>, p: Params| async move {
                let _ = delete_metadata(&p);
            }),
        route(M::POST, "/api/v1/consumer-groups/{group}/subscription", ReadWrite, resubscribe)
            .doc(op("Set a group's start instant")
                .body_of::<SubscriptionBody>(true, "The instant.")
                .fails(400, "`Missing subscriptionTimestamp in request body`, `subscriptionTimestamp must be an ISO-8601 timestamp, got …` (Queen 0.15: 500); `Invalid JSON: …`.")
                .answers::<Resubscribed>(200, "Updated."))
            .reads_request(&["ledger"], |_: PathParams<String>| async {})
            .reads_body(&[r#"{"subscriptionTimestamp": "2026-01-02T03:04:05Z"}"#], parse_subscription),
        route(M::DELETE, "/api/v1/consumer-groups/{group}/queues/{queue}", Admin, delete_for_queue)
            .doc(op("Delete a group on one queue")
                .query_of::<DeleteQuery>()
                .answers::<GroupDeleted>(200, "Deleted."))
            .reads_request(&["ledger/orders?deleteMetadata=false"], |_: PathParams<(String, String)>, p: Params| async move {
                let _ = delete_metadata(&p);
            }),
        route(M::POST, "/api/v1/consumer-groups/{group}/queues/{queue}/seek", ReadWrite, seek_queue)
            .doc(op("Seek a group's cursors on a queue")
                .body_of::<SeekBody>(true, "Where to.")
                .fails(400, "`Must specify either 'toEnd': true or 'timestamp'` (an empty body too), `timestamp must be an ISO-8601 timestamp, got …`; `Invalid JSON: …`.")
                .fails(404, "`Queue not found`.")
                .answers::<QueueSought>(200, "Moved."))
            .reads_request(&["ledger/orders"], |_: PathParams<(String, String)>| async {})
            .reads_body(&[
                r#"{"toEnd": true}"#,
                r#"{"timestamp": "2026-01-02T03:04:05.123Z"}"#,
                r#"{"toEnd": false, "timestamp": "2026-01-02T03:04:05+02:00"}"#,
            ], parse_seek),
        route(M::POST, "/api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", ReadWrite, seek_partition)
            .doc(op("Seek one partition's cursor to its end")
                .answers::<PartitionNotFound>(404, "`Partition not found`.")
                .answers::<PartitionSought>(200, "Moved."))
            .reads_request(&["ledger/orders/customer-42"], |_: PathParams<(String, String, String)>| async {}),
    ]
}

/// One (group, queue) of `GET /api/v1/consumer-groups`.
#[derive(Serialize, JsonSchema)]
struct GroupAnswer {
    name: String,
    topics: [String; 1],
    #[serde(rename = "queueName")]
    queue_name: String,
    /// Partitions the group has cursors on.
    members: i64,
    #[serde(rename = "partitionsWithLag")]
    partitions_with_lag: i64,
    /// Messages after the cursors.
    #[serde(rename = "totalLag")]
    total_lag: i64,
    /// Seconds since the last push to a partition it has not read to the end.
    #[serde(rename = "maxTimeLag")]
    max_time_lag: i64,
    #[schemars(extend("enum" = ["Stable", "Lagging", "Dead"]))]
    state: &'static str,
    #[serde(rename = "subscriptionMode")]
    #[schemars(extend("enum" = ["new", null]))]
    subscription_mode: Option<&'static str>,
    #[serde(rename = "subscriptionTimestamp")]
    subscription_timestamp: Option<Millis>,
    #[serde(rename = "subscriptionCreatedAt")]
    subscription_created_at: Option<Millis>,
}

impl From<GroupOnQueue> for GroupAnswer {
    fn from(g: GroupOnQueue) -> GroupAnswer {
        GroupAnswer {
            topics: [g.queue.clone()],
            name: g.group,
            queue_name: g.queue,
            members: g.partitions,
            partitions_with_lag: g.partitions_with_lag,
            total_lag: g.lag,
            max_time_lag: g.max_time_lag_secs,
            state: group_state(g.max_time_lag_secs, g.consuming),
            subscription_mode: g.starts_after.map(|_| "new"),
            subscription_timestamp: g.starts_after.map(Millis),
            subscription_created_at: g.joined_at.map(Millis),
        }
    }
}

/// The consumer-group listing's filters and page.
fn list_query(p: &Params) -> Result<(Option<&str>, Option<&str>, Page), ApiError> {
    let ListFilter { queue, search } = p.read()?;
    Ok((queue, search, p.page(Paging::LISTING)))
}

/// `GET /api/v1/consumer-groups`: a page of elements, one per (group, queue) the group has
/// cursors on, `__QUEUE_MODE__` included. `totalLag` is the real count of messages after the
/// cursors.
async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Vec<GroupAnswer>>, ApiError> {
    let (queue, search, page) = list_query(&p)?;
    let rows = s
        .service
        .groups()
        .list(&who.tenant, queue, search, page)
        .await?;
    Ok(Answer(rows.into_iter().map(GroupAnswer::from).collect()))
}

/// `GET /api/v1/consumer-groups/:group`: the group's cursors keyed by queue name.
#[derive(Serialize, JsonSchema)]
#[serde(transparent)]
struct GroupDetail(std::collections::BTreeMap<String, QueueCursors>);

#[derive(Serialize, JsonSchema)]
struct QueueCursors {
    partitions: Vec<CursorAnswer>,
}

/// One cursor of a group, counted now.
#[derive(Serialize, JsonSchema)]
struct CursorAnswer {
    partition: String,
    #[serde(rename = "workerId")]
    worker_id: Null,
    #[serde(rename = "lastConsumedAt")]
    last_consumed_at: Null,
    #[serde(rename = "totalConsumed")]
    total_consumed: i64,
    #[serde(rename = "offsetLag")]
    offset_lag: i64,
    /// Seconds since its first unread message was appended.
    #[serde(rename = "timeLagSeconds")]
    time_lag_seconds: i64,
    #[serde(rename = "leaseActive")]
    lease_active: bool,
}

/// `GET /api/v1/consumer-groups/:group`: a page of the group's cursors (pages in partition
/// creation order), counted now and keyed by queue name; `{}` for a group with none. Regent
/// keeps no worker ids nor consumption times: `workerId` and `lastConsumedAt` are null.
async fn detail(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    p: Params,
) -> Result<Answer<GroupDetail>, ApiError> {
    let rows = s
        .service
        .groups()
        .cursors(&who.tenant, &group, p.page(Paging::LISTING))
        .await?;
    let mut out = GroupDetail(Default::default());
    for r in rows {
        let PartitionLag {
            queue,
            partition,
            consumed,
            lag,
            time_lag_secs,
            leased,
            ..
        } = r;
        let cursor = CursorAnswer {
            partition,
            worker_id: Null,
            last_consumed_at: Null,
            total_consumed: consumed,
            offset_lag: lag,
            time_lag_seconds: time_lag_secs,
            lease_active: leased,
        };
        out.0
            .entry(queue)
            .or_insert_with(|| QueueCursors { partitions: vec![] })
            .partitions
            .push(cursor);
    }
    Ok(Answer(out))
}

/// One cursor of `GET /api/v1/consumer-groups/lagging`, in the route's snake_case.
#[derive(Serialize, JsonSchema)]
struct LaggingCursor {
    consumer_group: String,
    queue_name: String,
    partition_name: String,
    partition_id: Uuid,
    worker_id: Null,
    offset_lag: i64,
    time_lag_seconds: i64,
    lag_hours: f64,
    oldest_unconsumed_at: Millis,
    last_consumed_at: Null,
}

impl From<Lagging> for LaggingCursor {
    fn from(r: Lagging) -> LaggingCursor {
        LaggingCursor {
            lag_hours: r.time_lag_secs as f64 / 3600.0,
            consumer_group: r.group,
            queue_name: r.queue,
            partition_name: r.partition,
            partition_id: r.partition_id,
            worker_id: Null,
            offset_lag: r.offset_lag,
            time_lag_seconds: r.time_lag_secs,
            oldest_unconsumed_at: Millis(r.oldest_unread_at),
            last_consumed_at: Null,
        }
    }
}

/// `GET /api/v1/consumer-groups/lagging?minLagSeconds=3600`: the cursors whose first unread
/// message is older than the threshold, longest first, from the stats snapshot (which keeps
/// the tenant's 1,000 oldest).
async fn lagging(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Vec<LaggingCursor>>, ApiError> {
    let (min, page) = lagging_query(&p)?;
    let rows = s.service.groups().lagging(&who.tenant, min, page).await?;
    Ok(Answer(rows.into_iter().map(LaggingCursor::from).collect()))
}

/// The lagging route's threshold in seconds (an hour by default) and page.
fn lagging_query(p: &Params) -> Result<(f64, Page), ApiError> {
    let min = p.read::<LaggingQuery>()?.min_lag_seconds.unwrap_or(3600.0);
    Ok((min, p.page(LAGGING)))
}

/// `minLagSeconds`: a non-negative number of seconds.
fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    params::parse(d, |v| {
        let n = v.trim().parse::<f64>().ok();
        let n = n.filter(|n| n.is_finite() && *n >= 0.0);
        // No cursor lags longer (and `now()` less more is no timestamp).
        let n = n.map(|n| n.min(MAX_SPAN_SECONDS as f64));
        n.map(Some)
            .ok_or_else(|| format!("must be a non-negative number, got '{v}'"))
    })
}

/// Where a queue seek moves the group's cursors: `toEnd` wins when both are sent.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GroupSeek")]
struct SeekBody {
    #[schemars(with = "bool", default)]
    to_end: Option<Value>,
    #[schemars(with = "String", default, extend("format" = "date-time"))]
    timestamp: Option<Value>,
}

/// A group's new start instant.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "GroupSubscription")]
struct SubscriptionBody {
    #[schemars(with = "String", extend("format" = "date-time"))]
    subscription_timestamp: Option<Value>,
}

/// The seek body (none is `{}`, which names no target).
fn parse_seek(body: &RawBody) -> Result<SeekTo, ApiError> {
    seek_to(&body.json_or_empty_object()?)
}

/// `{"toEnd": true}` or `{"timestamp": "<ISO-8601>"}`; `toEnd` wins when both are sent. A
/// body that is not an object names no target.
fn seek_to(v: &Value) -> Result<SeekTo, ApiError> {
    let f: SeekBody = read::fields(v).unwrap_or_default();
    if f.to_end == Some(Value::Bool(true)) {
        return Ok(SeekTo::End);
    }
    instant(f.timestamp.as_ref(), "timestamp")?
        .map(SeekTo::At)
        .ok_or_else(|| ApiError::bad_request("Must specify either 'toEnd': true or 'timestamp'"))
}

/// The ISO-8601 instant in field `key`; `None` when it is absent or null.
fn instant(v: Option<&Value>, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) => DateTime::parse_from_rfc3339(t)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| {
                ApiError::bad_request(format!("{key} must be an ISO-8601 timestamp, got '{t}'"))
            }),
        Some(other) => Err(ApiError::bad_request(format!(
            "{key} must be an ISO-8601 timestamp, got {other}"
        ))),
    }
}

/// What a resubscription changed.
#[derive(Serialize, JsonSchema)]
struct Resubscribed {
    success: True,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    /// As sent.
    #[serde(rename = "newTimestamp")]
    new_timestamp: Value,
    /// Queues whose start instant changed.
    #[serde(rename = "rowsUpdated")]
    rows_updated: u64,
}

/// `POST /api/v1/consumer-groups/:group/subscription`: the group's start instant on every
/// queue it has joined, for the partitions it meets from now on (its cursors stay; seek
/// moves those).
async fn resubscribe(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    body: RawBody,
) -> Result<Answer<Resubscribed>, ApiError> {
    let (at, sent) = parse_subscription(&body)?;
    let updated = s
        .service
        .groups()
        .resubscribe(&who.tenant, &group, at)
        .await?;
    Ok(Answer(Resubscribed {
        success: True,
        consumer_group: group,
        new_timestamp: sent,
        rows_updated: updated,
    }))
}

/// The new start instant, and the text it was sent as (echoed back).
fn parse_subscription(body: &RawBody) -> Result<(DateTime<Utc>, Value), ApiError> {
    // A body that is not an object holds no instant.
    let f: SubscriptionBody = read::fields(&body.json_or_empty_object()?).unwrap_or_default();
    let sent = f.subscription_timestamp;
    let Some(at) = instant(sent.as_ref(), "subscriptionTimestamp")? else {
        return Err(ApiError::bad_request(
            "Missing subscriptionTimestamp in request body",
        ));
    };
    Ok((at, sent.unwrap_or_default()))
}

/// Where a queue seek moved the group.
#[derive(Serialize, JsonSchema)]
struct QueueSought {
    success: True,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    #[serde(rename = "queueName")]
    queue_name: String,
    #[serde(rename = "seekToEnd")]
    seek_to_end: bool,
    /// The instant sought, or null for the end.
    #[serde(rename = "targetTimestamp")]
    target_timestamp: Option<Millis>,
    #[serde(rename = "partitionsUpdated")]
    partitions_updated: usize,
}

/// `POST /api/v1/consumer-groups/:group/queues/:queue/seek`: every partition of the queue the
/// group has a cursor on. Leases are released; acks under them are refused from then on.
async fn seek_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue)): PathParams<(String, String)>,
    body: RawBody,
) -> Result<Answer<QueueSought>, ApiError> {
    let to = parse_seek(&body)?;
    let moved = match s
        .service
        .groups()
        .seek(&who.tenant, &queue, &group, None, to)
        .await?
    {
        Seek::Moved(moved) => moved,
        Seek::NoQueue | Seek::NoPartition => {
            return Err(ApiError::NotFound("Queue not found".into()))
        }
    };
    Ok(Answer(QueueSought {
        success: True,
        consumer_group: group,
        queue_name: queue,
        seek_to_end: to == SeekTo::End,
        target_timestamp: match to {
            SeekTo::End => None,
            SeekTo::At(t) => Some(Millis(t)),
        },
        partitions_updated: moved.len(),
    }))
}

/// Where a partition seek moved the group.
#[derive(Serialize, JsonSchema)]
struct PartitionSought {
    success: True,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    #[serde(rename = "queueName")]
    queue_name: String,
    #[serde(rename = "partitionName")]
    partition_name: String,
    /// The group had a cursor there.
    updated: bool,
    /// When the message the cursor is now on was appended.
    #[serde(rename = "cursorMovedTo")]
    cursor_moved_to: Option<Millis>,
}

/// The partition seek's 404, in the route's own shape.
#[derive(Serialize, JsonSchema)]
struct PartitionNotFound {
    #[schemars(extend("const" = false))]
    success: bool,
    error: &'static str,
}

/// `POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek`: one
/// partition's cursor onto its newest message. No body. An unknown queue or partition is a
/// 404 in the route's own shape, `{"success": false, "error": "Partition not found"}`.
async fn seek_partition(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue, partition)): PathParams<(String, String, String)>,
) -> Result<Response, ApiError> {
    let moved = match s
        .service
        .groups()
        .seek(&who.tenant, &queue, &group, Some(&partition), SeekTo::End)
        .await?
    {
        Seek::Moved(moved) => moved,
        Seek::NoQueue | Seek::NoPartition => {
            let body = PartitionNotFound {
                success: false,
                error: "Partition not found",
            };
            return Ok(Answer(body).with_status(StatusCode::NOT_FOUND));
        }
    };
    Ok(Answer(PartitionSought {
        success: True,
        consumer_group: group,
        queue_name: queue,
        partition_name: partition,
        updated: !moved.is_empty(),
        cursor_moved_to: moved.first().and_then(|m| m.appended_at).map(Millis),
    })
    .into_response())
}

/// What a group deletion removed.
#[derive(Serialize, JsonSchema)]
struct GroupDeleted {
    success: True,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    /// Cursors deleted.
    #[serde(rename = "deletedPartitions")]
    deleted_partitions: u64,
    /// Whether its stored start points were deleted (`deleteMetadata`).
    #[serde(rename = "metadataDeleted")]
    metadata_deleted: bool,
    /// The queue, when the group was deleted on one.
    #[serde(rename = "queueName", skip_serializing_if = "Option::is_none")]
    queue_name: Option<String>,
}

/// `deleteMetadata`: true unless sent as anything but `true` or `1`.
fn delete_metadata(p: &Params) -> Result<bool, ApiError> {
    Ok(p.read::<DeleteQuery>()?.delete_metadata)
}

/// Deletes the group on one queue or all. Its next pop on this broker gives it cursors at
/// once, not after the sweep interval (other brokers' pops within that interval).
async fn delete_in(
    s: &AppState,
    who: &Principal,
    group: String,
    queue: Option<String>,
    p: &Params,
) -> Result<Answer<GroupDeleted>, ApiError> {
    let metadata = delete_metadata(p)?;
    let deleted = s
        .service
        .groups()
        .delete(&who.tenant, &group, queue.as_deref(), metadata)
        .await?;
    Ok(Answer(GroupDeleted {
        success: True,
        consumer_group: group,
        deleted_partitions: deleted.cursors,
        metadata_deleted: deleted.start_points,
        queue_name: queue,
    }))
}

/// `DELETE /api/v1/consumer-groups/:group[?deleteMetadata=true]`: the group's cursors and
/// leases on every queue, and (unless `deleteMetadata` is sent as anything but `true`/`1`)
/// its stored start points. Idempotent.
async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    p: Params,
) -> Result<Answer<GroupDeleted>, ApiError> {
    delete_in(&s, &who, group, None, &p).await
}

/// `DELETE /api/v1/consumer-groups/:group/queues/:queue[?deleteMetadata=true]`: the same on
/// one queue.
async fn delete_for_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue)): PathParams<(String, String)>,
    p: Params,
) -> Result<Answer<GroupDeleted>, ApiError> {
    delete_in(&s, &who, group, Some(queue), &p).await
}
