//! `GET /api/v1/dlq`: dead letters, newest failure first, with the `total` the Python client
//! reads; and Regent's bulk routes `POST /api/v1/dlq/requeue` and `POST /api/v1/dlq/delete`.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::params::Params;
use super::time::{instant, millis};
use super::State;
use regent_service::dead_letters::{
    Bulk, BulkItem, BulkOutcome, BulkVerdict, Filter, Selector, MAX_BULK,
};

/// The listing's filter and page.
pub(crate) fn list_filter(p: &Params) -> Result<Filter<'_>, ApiError> {
    Ok(Filter {
        queue: p.str("queue"),
        group: p.str("consumerGroup"),
        partition: p.str("partition"),
        from: instant(p, "from")?,
        to: instant(p, "to")?,
        reason: p.str("reason"),
        limit: p.int("limit").unwrap_or(100).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    })
}

pub async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let filter = list_filter(&p)?;
    let (letters, total) = s.service.dead_letters(&who.tenant, &filter).await?;
    let messages: Vec<Value> = letters
        .into_iter()
        .map(|d| {
            let m = d.message.message;
            json!({
                "deadLetterId": d.id, "id": m.message_id, "transactionId": m.transaction_id,
                "partitionId": d.partition_id, "queue": d.queue, "partition": d.partition,
                "consumerGroup": d.group, "errorMessage": d.error, "retryCount": d.retry_count,
                "data": m.payload, "producerSub": m.producer_sub, "traceId": m.trace_id,
                "createdAt": millis(d.message.created_at), "failedAt": millis(d.failed_at),
            })
        })
        .collect();
    Ok(Json(json!({
        "messages": messages,
        "pagination": { "limit": filter.limit, "offset": filter.offset },
        "total": total,
    })))
}

/// The bulk routes' body, read: a selector (ids, a filter, both, or `all`), `limit`, `dryRun`.
pub(crate) struct BulkBody {
    ids: Option<Vec<i64>>,
    queue: Option<String>,
    partition: Option<String>,
    group: Option<String>,
    reason: Option<String>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    all: bool,
    limit: Option<i64>,
    dry_run: bool,
}

/// Every key the bulk routes read. Any other is refused: a misspelt filter next to
/// `"all": true` must not widen the call to every dead letter.
pub(crate) const BULK_KEYS: [&str; 10] = [
    "ids",
    "queue",
    "partition",
    "consumerGroup",
    "reason",
    "from",
    "to",
    "all",
    "dryRun",
    "limit",
];

impl BulkBody {
    pub(crate) fn parse(body: &RawBody) -> Result<BulkBody, ApiError> {
        let v = body.json_or_empty_object()?;
        let o = v
            .as_object()
            .ok_or_else(|| ApiError::bad_request("the body must be a JSON object"))?;
        if let Some(k) = o.keys().find(|k| !BULK_KEYS.contains(&k.as_str())) {
            return Err(ApiError::bad_request(format!(
                "unknown field {k}: expected one of {}",
                BULK_KEYS.join(", ")
            )));
        }
        let b = BulkBody {
            ids: ids(o.get("ids"))?,
            queue: text(o, "queue")?,
            partition: text(o, "partition")?,
            group: text(o, "consumerGroup")?,
            reason: text(o, "reason")?,
            from: body_instant(o, "from")?,
            to: body_instant(o, "to")?,
            all: flag(o, "all")?,
            limit: limit(o.get("limit"))?,
            dry_run: flag(o, "dryRun")?,
        };
        if !b.selects() {
            return Err(ApiError::bad_request("ids or a filter is required"));
        }
        Ok(b)
    }

    /// Whether the body names what to take: nothing named must not mean everything.
    fn selects(&self) -> bool {
        self.all
            || self.ids.is_some()
            || self.queue.is_some()
            || self.partition.is_some()
            || self.group.is_some()
            || self.reason.is_some()
            || self.from.is_some()
            || self.to.is_some()
    }

    fn bulk(&self) -> Bulk<'_> {
        Bulk {
            selector: Selector {
                ids: self.ids.as_deref(),
                queue: self.queue.as_deref(),
                partition: self.partition.as_deref(),
                group: self.group.as_deref(),
                reason: self.reason.as_deref(),
                from: self.from,
                to: self.to,
            },
            limit: self.limit.unwrap_or(MAX_BULK),
            dry_run: self.dry_run,
        }
    }
}

type Object = serde_json::Map<String, Value>;

/// A string field; absent or null is no filter. An empty string is a value like any other
/// (it matches the empty name or reason).
fn text(o: &Object, key: &str) -> Result<Option<String>, ApiError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::bad_request(format!("{key} must be a string"))),
    }
}

fn flag(o: &Object, key: &str) -> Result<bool, ApiError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::bad_request(format!(
            "{key} must be true or false"
        ))),
    }
}

fn body_instant(o: &Object, key: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    let refused = || ApiError::bad_request(format!("{key} must be an ISO-8601 timestamp"));
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) => DateTime::parse_from_rfc3339(t)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| refused()),
        Some(_) => Err(refused()),
    }
}

fn ids(v: Option<&Value>) -> Result<Option<Vec<i64>>, ApiError> {
    let refused = || ApiError::bad_request("ids must be an array of dead-letter ids (integers)");
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|id| id.as_i64().ok_or_else(refused))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(refused()),
    }
}

fn limit(v: Option<&Value>) -> Result<Option<i64>, ApiError> {
    let refused =
        || ApiError::bad_request(format!("limit must be an integer from 1 to {MAX_BULK}"));
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(n) => match n.as_i64() {
            Some(n) if (1..=MAX_BULK).contains(&n) => Ok(Some(n)),
            _ => Err(refused()),
        },
    }
}

/// Which bulk route answers: the key of its count, and whether items carry the copy.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BulkRoute {
    Requeue,
    Delete,
}

fn verdict_name(v: BulkVerdict) -> &'static str {
    match v {
        BulkVerdict::Requeued(_) => "requeued",
        BulkVerdict::Duplicate(_) => "duplicate",
        BulkVerdict::Gone => "gone",
        BulkVerdict::Deleted => "deleted",
    }
}

fn bulk_item(i: &BulkItem, route: BulkRoute) -> Value {
    let found = i.found.as_ref();
    let mut item = json!({
        "deadLetterId": i.dead_letter_id,
        "transactionId": found.map(|f| &f.transaction_id),
        "partitionId": found.map(|f| f.partition_id),
        "consumerGroup": found.map(|f| &f.group),
        "verdict": verdict_name(i.verdict),
    });
    if route == BulkRoute::Requeue {
        let copy = match i.verdict {
            BulkVerdict::Requeued(id) | BulkVerdict::Duplicate(id) => id,
            BulkVerdict::Gone | BulkVerdict::Deleted => None,
        };
        item["messageId"] = json!(copy);
        item["newTransactionId"] = json!(i.copy_transaction_id);
    }
    item
}

fn render(out: &BulkOutcome, dry_run: bool, route: BulkRoute) -> Value {
    let count = |f: fn(&BulkVerdict) -> bool| out.items.iter().filter(|i| f(&i.verdict)).count();
    let (key, done) = match route {
        BulkRoute::Requeue => ("requeued", count(|v| matches!(v, BulkVerdict::Requeued(_)))),
        BulkRoute::Delete => ("deleted", count(|v| *v == BulkVerdict::Deleted)),
    };
    let items: Vec<Value> = out.items.iter().map(|i| bulk_item(i, route)).collect();
    let mut body = json!({
        "dryRun": dry_run,
        "matched": out.items.len(),
        "duplicates": count(|v| matches!(v, BulkVerdict::Duplicate(_))),
        "gone": count(|v| *v == BulkVerdict::Gone),
        "more": out.more,
        "items": items,
    });
    body[key] = json!(done);
    body
}

/// `POST /api/v1/dlq/requeue`: the selected dead letters' snapshots appended to their
/// partitions as new messages, and the dead letters removed, in one transaction.
pub async fn requeue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let b = BulkBody::parse(&body)?;
    let out = s
        .service
        .requeue_dead_letters(&who.tenant, &b.bulk())
        .await?;
    Ok(Json(render(&out, b.dry_run, BulkRoute::Requeue)))
}

/// `POST /api/v1/dlq/delete`: the selected dead letters deleted, in one transaction.
pub async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let b = BulkBody::parse(&body)?;
    let out = s
        .service
        .delete_dead_letters(&who.tenant, &b.bulk())
        .await?;
    Ok(Json(render(&out, b.dry_run, BulkRoute::Delete)))
}
