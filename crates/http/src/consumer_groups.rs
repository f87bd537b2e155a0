//! Consumer groups: what each is doing on each queue; seek a group's cursors to the end of a
//! queue (skip its backlog) or back to an instant (replay), on the whole queue or one
//! partition; delete a group, on every queue or one.

use axum::extract::State as AxState;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::params::Params;
use super::path::PathParams;
use super::resources::page;
use super::time::millis;
use super::{AppState, State};
use regent_broker::group_state::group_state;
use regent_service::groups::{Seek, SeekTo};
use regent_service::queues::Page;

/// `GET /api/v1/consumer-groups`: a page (`limit` 1,000, `offset`) of elements, one per
/// (group, queue) the group has cursors on, `__QUEUE_MODE__` included. `totalLag` is the
/// real count of messages after the cursors.
pub async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let (queue, search) = (p.str("queue"), p.str("search").filter(|s| !s.is_empty()));
    let rows = s
        .service
        .consumer_groups(&who.tenant, queue, search, page(&p))
        .await?;
    let out: Vec<Value> = rows
        .into_iter()
        .map(|g| {
            json!({
                "name": g.group, "topics": [g.queue], "queueName": g.queue,
                "members": g.partitions, "partitionsWithLag": g.partitions_with_lag,
                "totalLag": g.lag, "maxTimeLag": g.max_time_lag_secs,
                "state": group_state(g.max_time_lag_secs, g.consuming),
                "subscriptionMode": g.starts_after.map(|_| "new"),
                "subscriptionTimestamp": g.starts_after.map(millis),
                "subscriptionCreatedAt": g.joined_at.map(millis),
            })
        })
        .collect();
    Ok(Json(Value::Array(out)))
}

/// `GET /api/v1/consumer-groups/:group`: a page of the group's cursors (`limit`, 1,000 by
/// default, `offset`; pages in partition creation order), counted now and keyed by queue name; `{}`
/// for a group with none. Regent keeps no worker ids nor consumption times: `workerId` and
/// `lastConsumedAt` are null.
pub async fn detail(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let rows = s
        .service
        .group_cursors(&who.tenant, &group, page(&p))
        .await?;
    let mut out = serde_json::Map::new();
    for r in rows {
        let entry = out
            .entry(r.queue.clone())
            .or_insert_with(|| json!({"partitions": []}));
        entry["partitions"]
            .as_array_mut()
            .expect("built above")
            .push(json!({
                "partition": r.partition, "workerId": null, "lastConsumedAt": null,
                "totalConsumed": r.consumed, "offsetLag": r.lag,
                "timeLagSeconds": r.time_lag_secs, "leaseActive": r.leased,
            }));
    }
    Ok(Json(Value::Object(out)))
}

/// `GET /api/v1/consumer-groups/lagging?minLagSeconds=3600`: the cursors whose first unread
/// message is older than the threshold, longest first, in the route's snake_case, from the
/// stats snapshot (which keeps the tenant's 1,000 oldest); `limit` (1,000) and `offset`.
pub async fn lagging(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let (min, page) = lagging_query(&p)?;
    let rows = s.service.lagging(&who.tenant, min, page).await?;
    let out: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            json!({
                "consumer_group": r.group, "queue_name": r.queue, "partition_name": r.partition,
                "partition_id": r.partition_id, "worker_id": null, "offset_lag": r.offset_lag,
                "time_lag_seconds": r.time_lag_secs,
                "lag_hours": r.time_lag_secs as f64 / 3600.0,
                "oldest_unconsumed_at": millis(r.oldest_unread_at),
                "last_consumed_at": null,
            })
        })
        .collect();
    Ok(Json(Value::Array(out)))
}

/// The lagging route's threshold in seconds (an hour by default) and page.
pub(crate) fn lagging_query(p: &Params) -> Result<(f64, Page), ApiError> {
    let min = match p.str("minLagSeconds") {
        None => 3600.0,
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "minLagSeconds must be a non-negative number, got '{v}'"
                ))
            })?,
    };
    let page = Page {
        limit: p.int("limit").unwrap_or(1000).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    };
    Ok((min, page))
}

/// The seek body (none is `{}`, which names no target).
pub(crate) fn parse_seek(body: &RawBody) -> Result<SeekTo, ApiError> {
    seek_to(&body.json_or_empty_object()?)
}

/// `{"toEnd": true}` or `{"timestamp": "<ISO-8601>"}`; `toEnd` wins when both are sent.
fn seek_to(v: &Value) -> Result<SeekTo, ApiError> {
    if v.get("toEnd") == Some(&Value::Bool(true)) {
        return Ok(SeekTo::End);
    }
    instant(v, "timestamp")?
        .map(SeekTo::At)
        .ok_or_else(|| ApiError::bad_request("Must specify either 'toEnd': true or 'timestamp'"))
}

/// The ISO-8601 instant in field `key`; `None` when it is absent or null.
fn instant(v: &Value, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    match v.get(key) {
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

/// `POST /api/v1/consumer-groups/:group/subscription`: the group's start instant on every
/// queue it has joined, for the partitions it meets from now on (its cursors stay; seek
/// moves those).
pub async fn resubscribe(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let (at, sent) = parse_subscription(&body)?;
    let updated = s.service.resubscribe(&who.tenant, &group, at).await?;
    Ok(Json(json!({
        "success": true, "consumerGroup": group,
        "newTimestamp": sent, "rowsUpdated": updated,
    })))
}

/// The new start instant, and the text it was sent as (echoed back).
pub(crate) fn parse_subscription(body: &RawBody) -> Result<(DateTime<Utc>, Value), ApiError> {
    let v = body.json_or_empty_object()?;
    let Some(at) = instant(&v, "subscriptionTimestamp")? else {
        return Err(ApiError::bad_request(
            "Missing subscriptionTimestamp in request body",
        ));
    };
    Ok((at, v["subscriptionTimestamp"].clone()))
}

/// `POST /api/v1/consumer-groups/:group/queues/:queue/seek`: every partition of the queue the
/// group has a cursor on. Leases are released; acks under them are refused from then on.
pub async fn seek_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue)): PathParams<(String, String)>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let to = parse_seek(&body)?;
    let moved = match s
        .service
        .seek(&who.tenant, &queue, &group, None, to)
        .await?
    {
        Seek::Moved(moved) => moved,
        Seek::NoQueue | Seek::NoPartition => {
            return Err(ApiError::NotFound("Queue not found".into()))
        }
    };
    let target = match to {
        SeekTo::End => Value::Null,
        SeekTo::At(t) => json!(millis(t)),
    };
    Ok(Json(json!({
        "success": true, "consumerGroup": group, "queueName": queue,
        "seekToEnd": to == SeekTo::End, "targetTimestamp": target,
        "partitionsUpdated": moved.len(),
    })))
}

/// `POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek`: one
/// partition's cursor onto its newest message. No body. An unknown queue or partition is a
/// 404 in the route's own shape, `{"success": false, "error": "Partition not found"}`.
pub async fn seek_partition(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue, partition)): PathParams<(String, String, String)>,
) -> Result<Response, ApiError> {
    let moved = match s
        .service
        .seek(&who.tenant, &queue, &group, Some(&partition), SeekTo::End)
        .await?
    {
        Seek::Moved(moved) => moved,
        Seek::NoQueue | Seek::NoPartition => {
            let body = json!({"success": false, "error": "Partition not found"});
            return Ok((StatusCode::NOT_FOUND, Json(body)).into_response());
        }
    };
    let moved_to = moved.first().and_then(|m| m.appended_at).map(millis);
    Ok(Json(json!({
        "success": true, "consumerGroup": group, "queueName": queue,
        "partitionName": partition, "updated": !moved.is_empty(), "cursorMovedTo": moved_to,
    }))
    .into_response())
}

/// Deletes the group on one queue or all. Its next pop on this broker gives it cursors at
/// once, not after the sweep interval (other brokers' pops within that interval).
async fn delete_in(
    s: &AppState,
    who: &Principal,
    group: String,
    queue: Option<String>,
    p: &Params,
) -> Result<Json<Value>, ApiError> {
    let metadata = p.flag("deleteMetadata", true);
    let deleted = s
        .service
        .delete_group(&who.tenant, &group, queue.as_deref(), metadata)
        .await?;
    let mut body = json!({
        "success": true, "consumerGroup": group, "deletedPartitions": deleted.cursors,
        "metadataDeleted": deleted.start_points,
    });
    if let Some(q) = queue {
        body["queueName"] = json!(q);
    }
    Ok(Json(body))
}

/// `DELETE /api/v1/consumer-groups/:group[?deleteMetadata=true]`: the group's cursors and
/// leases on every queue, and (unless `deleteMetadata` is sent as anything but `true`/`1`)
/// its stored start points. Idempotent.
pub async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(group): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    delete_in(&s, &who, group, None, &p).await
}

/// `DELETE /api/v1/consumer-groups/:group/queues/:queue[?deleteMetadata=true]`: the same on
/// one queue.
pub async fn delete_for_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((group, queue)): PathParams<(String, String)>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    delete_in(&s, &who, group, Some(queue), &p).await
}
