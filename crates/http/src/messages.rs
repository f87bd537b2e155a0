//! `/api/v1/messages`: the listing (newest first across partitions), one message, and what
//! an operator does to one (delete, retry, move to the dead-letter queue). What each means on
//! a log with a cursor per group: docs/design/storage.md, "Single messages".

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use chrono::{DateTime, Duration, DurationRound, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::answer::{Answer, Millis, True};
use super::auth::Principal;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::routes::{route, Entry, Level::*};
use super::time::Instant;
use super::State;
use regent_rules::message_status::{Seen, Status};
use regent_rules::naming::QUEUE_MODE;
use regent_rules::options::QueueOptions;
use regent_service::messages::Scope;
use regent_service::messages::{Done, Found, ListQuery};

const TAG: Tag = (
    "messages",
    "Single messages: the listing, one message, and what an operator does to one (delete, retry, move to the dead-letter queue).",
);

const MESSAGE: &str = "/api/v1/messages/{partition_id}/{transaction_id}";

/// The listing pages 200 messages by default, at most 1,000.
const LISTING: Paging = Paging {
    default: 200,
    max: 1000,
};

/// What a message's `status` means.
const STATUS: &str = "`dead_letter` when a dead letter was filed for it; else as queue mode reads the partition: `completed` at or below its cursor, `processing` under its live lease, `pending` otherwise; with named groups only, `completed` once every one passed it.";

const BAD_PID: &str = "`partitionId must be a UUID`.";

const SEEDS: &[&str] = &["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d/ord-77-created"];

/// A listing's filter, as [`list_query`] reads it.
#[derive(Deserialize, JsonSchema)]
struct ListFilter<'a> {
    /// Exact queue name.
    #[serde(borrow)]
    queue: Option<&'a str>,
    /// Exact partition name.
    #[serde(borrow)]
    partition: Option<&'a str>,
    /// Namespace (the key is `ns`, not `namespace`).
    #[serde(borrow)]
    ns: Option<&'a str>,
    /// Task.
    #[serde(borrow)]
    task: Option<&'a str>,
    /// On the computed status; another value matches nothing.
    #[serde(borrow)]
    #[schemars(
        with = "String",
        extend("enum" = ["pending", "processing", "completed", "dead_letter"])
    )]
    status: Option<&'a str>,
    /// Inclusive; default an hour ago.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    from: Instant,
    /// Rounded up to the end of its minute; default now.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    to: Instant,
}

/// The group a dead letter is filed for, as [`dlq_group`] reads it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DlqQuery<'a> {
    /// The group the dead letter is filed for.
    #[serde(borrow)]
    #[schemars(extend("default" = QUEUE_MODE))]
    consumer_group: Option<&'a str>,
}

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::GET, "/api/v1/messages", ReadOnly, list)
            .doc(op("List messages, newest first")
                .query_of::<ListFilter>()
                .paged(LISTING, "Messages")
                .fails(400, "`from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
                .answers::<Listing>(200, "A page of messages."))
            .reads_request(
                &["?queue=q&partition=Default&ns=n&task=t&status=pending&limit=50&offset=10&from=2026-01-01T00:00:00Z"],
                |p: Params| async move { list_query(&p, Utc::now()).map(drop) },
            ),
        route(M::GET, MESSAGE, ReadOnly, get)
            .doc(op("One message")
                .fails(400, BAD_PID)
                .fails(404, "`Message not found`.")
                .answers::<Detail>(200, "The message."))
            .reads_request(SEEDS, read_message),
        route(M::DELETE, MESSAGE, ReadWrite, delete)
            .doc(op("Delete a message")
                .fails(400, BAD_PID)
                .answers::<MessageDeleted>(200, "Deleted (`success: true`), or not found (`success: false`, `Message not found`)."))
            .reads_request(SEEDS, read_message),
        route(M::POST, "/api/v1/messages/{partition_id}/{transaction_id}/retry", ReadWrite, retry)
            .doc(op("Retry a message as a copy")
                .quota()
                .fails(400, "`partitionId must be a UUID`; a sealed payload this broker's key cannot open.")
                .fails(404, "`Message not found`.")
                .answers::<Retried>(200, "The copy."))
            .reads_request(SEEDS, read_message),
        route(M::POST, "/api/v1/messages/{partition_id}/{transaction_id}/dlq", ReadWrite, to_dlq)
            .doc(op("Move a message to the dead-letter queue")
                .query_of::<DlqQuery>()
                .fails(400, BAD_PID)
                .fails(404, "`Message not found`.")
                .answers::<DeadLettered>(200, "Dead-lettered."))
            .reads_request(
                &["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d/t-1?consumerGroup=ledger"],
                |PathParams((pid, _)): PathParams<(String, String)>, p: Params| async move {
                    let _ = dlq_group(&p);
                    partition_id(&pid).map(drop)
                },
            ),
    ]
}

/// What the single-message routes read of their path before the service call.
async fn read_message(PathParams((pid, _)): PathParams<(String, String)>) -> Result<(), ApiError> {
    partition_id(&pid).map(drop)
}

fn partition_id(pid: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(pid).map_err(|_| ApiError::bad_request("partitionId must be a UUID"))
}

fn not_found() -> ApiError {
    ApiError::NotFound("Message not found".into())
}

/// How a message's partition is consumed.
#[derive(Serialize, JsonSchema)]
struct MessageMode {
    /// Queue mode reads the partition.
    #[serde(rename = "hasQueueMode")]
    has_queue_mode: bool,
    /// Named groups reading the partition.
    #[serde(rename = "busGroupsCount")]
    bus_groups_count: usize,
    /// Named groups that have passed the message (absent for an empty page).
    #[serde(rename = "consumedByGroups", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "usize")]
    consumed_by_groups: Option<usize>,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["queue", "bus", "hybrid", "none"]))]
    kind: &'static str,
}

impl MessageMode {
    /// An empty page's: no partition to describe.
    const NONE: MessageMode = MessageMode {
        has_queue_mode: false,
        bus_groups_count: 0,
        consumed_by_groups: None,
        kind: "none",
    };

    fn of(s: &Seen) -> MessageMode {
        MessageMode {
            has_queue_mode: matches!(s.mode.name(), "queue" | "hybrid"),
            bus_groups_count: s.bus_groups,
            consumed_by_groups: Some(s.consumed_by),
            kind: s.mode.name(),
        }
    }
}

/// A message and where it is: what every message route names it by (the status page's
/// message list too).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageAt {
    id: Uuid,
    transaction_id: String,
    partition_id: Uuid,
    /// `<queue>/<partition>`.
    queue_path: String,
    queue: String,
    partition: String,
}

impl MessageAt {
    pub(crate) fn of(f: &Found) -> MessageAt {
        let (m, p) = (&f.message.message, &f.place);
        MessageAt {
            id: m.message_id,
            transaction_id: m.transaction_id.clone(),
            partition_id: p.partition_id,
            queue_path: format!("{}/{}", p.queue, p.partition),
            queue: p.queue.clone(),
            partition: p.partition.clone(),
        }
    }
}

/// The fields the listing and the detail share.
#[derive(Serialize, JsonSchema)]
struct Common {
    #[serde(flatten)]
    at: MessageAt,
    namespace: String,
    task: String,
    #[schemars(description = STATUS)]
    #[schemars(extend("enum" = ["pending", "processing", "completed", "dead_letter"]))]
    status: &'static str,
    #[serde(rename = "traceId")]
    trace_id: Option<Uuid>,
    #[serde(rename = "producerSub")]
    producer_sub: Option<String>,
    #[serde(rename = "createdAt")]
    created_at: Millis,
    #[serde(rename = "leaseExpiresAt")]
    lease_expires_at: Option<Millis>,
}

impl Common {
    fn of(f: &Found) -> Common {
        let (m, p) = (&f.message.message, &f.place);
        Common {
            at: MessageAt::of(f),
            namespace: p.namespace.clone(),
            task: p.task.clone(),
            status: f.seen.status.name(),
            trace_id: m.trace_id,
            producer_sub: m.producer_sub.clone(),
            created_at: Millis(f.message.created_at),
            lease_expires_at: f.seen.lease_expires_at.map(Millis),
        }
    }
}

/// `GET /api/v1/messages`: a page of messages and how the first one's partition is consumed.
#[derive(Serialize, JsonSchema)]
struct Listing {
    messages: Vec<Listed>,
    mode: MessageMode,
}

/// A message of the listing (no payload).
#[derive(Serialize, JsonSchema)]
struct Listed {
    #[serde(flatten)]
    common: Common,
    /// Queue mode's view alone.
    #[serde(rename = "queueStatus")]
    #[schemars(extend("enum" = ["pending", "processing", "completed"]))]
    queue_status: &'static str,
    #[serde(rename = "busStatus")]
    bus_status: BusStatus,
    #[serde(rename = "queuePriority")]
    queue_priority: i64,
}

/// Named groups that have passed the message, out of those reading its partition.
#[derive(Serialize, JsonSchema)]
struct BusStatus {
    #[serde(rename = "consumedBy")]
    consumed_by: usize,
    #[serde(rename = "totalGroups")]
    total_groups: usize,
}

impl From<&Found> for Listed {
    fn from(f: &Found) -> Listed {
        Listed {
            common: Common::of(f),
            queue_status: f.seen.queue_status.name(),
            bus_status: BusStatus {
                consumed_by: f.seen.consumed_by,
                total_groups: f.seen.bus_groups,
            },
            queue_priority: QueueOptions::from_stored(&f.place.options).priority(),
        }
    }
}

/// The listing's query; `None` when it names a status no message can have (it matches
/// nothing: Queen filters on the computed status).
fn list_query(p: &Params, now: DateTime<Utc>) -> Result<Option<ListQuery<'_>>, ApiError> {
    let f: ListFilter = p.read()?;
    let to = f.to.get()?.unwrap_or(now);
    let to = to.duration_trunc(Duration::minutes(1)).unwrap_or(to) + Duration::minutes(1)
        - Duration::microseconds(1);
    let scope = Scope {
        queue: f.queue,
        partition: f.partition,
        namespace: f.ns,
        task: f.task,
        from: f.from.get()?.unwrap_or(now - Duration::hours(1)),
        to,
    };
    let status = f.status;
    if status.is_some_and(|st| Status::parse(st).is_none()) {
        return Ok(None);
    }
    let page = p.page(LISTING);
    Ok(Some(ListQuery {
        scope,
        status: status.and_then(Status::parse),
        limit: page.limit,
        offset: page.offset,
    }))
}

/// `Admin.list_messages`: newest first, without payloads. `from` defaults to an hour ago,
/// `to` to now (rounded up to the end of its minute); `limit` 200 (at most 1,000).
async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Listing>, ApiError> {
    let Some(q) = list_query(&p, Utc::now())? else {
        return Ok(Answer(Listing {
            messages: Vec::new(),
            mode: MessageMode::NONE,
        }));
    };
    let found = s.service.messages().list(&who.tenant, &q).await?;
    Ok(Answer(Listing {
        messages: found.iter().map(Listed::from).collect(),
        mode: found
            .first()
            .map(|f| MessageMode::of(&f.seen))
            .unwrap_or(MessageMode::NONE),
    }))
}

/// `GET /api/v1/messages/:partition_id/:transaction_id`: one message, with its payload.
#[derive(Serialize, JsonSchema)]
struct Detail {
    #[serde(flatten)]
    common: Common,
    /// The payload as pushed (the key is `payload` here, `data` on pop and the dead-letter
    /// listing).
    #[schemars(with = "Value")]
    payload: Box<RawValue>,
    /// The queue seals payloads at rest (shown opened).
    #[serde(rename = "isEncrypted")]
    is_encrypted: bool,
    /// From its dead letter, if one was filed.
    #[serde(rename = "errorMessage")]
    error_message: Option<String>,
    #[serde(rename = "retryCount")]
    retry_count: Option<i32>,
    #[serde(rename = "queueConfig")]
    queue_config: QueueConfig,
    mode: MessageMode,
    #[serde(rename = "consumerGroups")]
    consumer_groups: Vec<GroupView>,
}

/// The options of the message's queue that decide its delivery.
#[derive(Serialize, JsonSchema)]
struct QueueConfig {
    #[serde(rename = "leaseTime")]
    lease_time: i64,
    #[serde(rename = "retryLimit")]
    retry_limit: i32,
    priority: i64,
}

/// What one group reading the partition made of the message.
#[derive(Serialize, JsonSchema)]
struct GroupView {
    name: String,
    /// The group's cursor passed it.
    consumed: bool,
    /// The expiry of the group's live lease over it.
    #[serde(rename = "leaseExpiresAt")]
    lease_expires_at: Option<Millis>,
}

/// `Admin.get_message`: one message with its payload (key `payload`), its status per group
/// and the dead letter's reason, if one was filed.
async fn get(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Answer<Detail>, ApiError> {
    let pid = partition_id(&pid)?;
    let Some(f) = s.service.messages().get(&who.tenant, pid, &txid).await? else {
        return Err(not_found());
    };
    let o = QueueOptions::from_stored(&f.place.options);
    Ok(Answer(Detail {
        common: Common::of(&f),
        payload: f.message.message.payload.clone(),
        is_encrypted: o.encrypted(),
        error_message: f.dead.as_ref().map(|d| d.error.clone()),
        retry_count: f.dead.as_ref().map(|d| d.retry_count),
        queue_config: QueueConfig {
            lease_time: o.lease_seconds(),
            retry_limit: o.retry_limit(),
            priority: o.priority(),
        },
        mode: MessageMode::of(&f.seen),
        consumer_groups: f
            .groups
            .iter()
            .map(|(name, consumed, lease)| GroupView {
                name: name.clone(),
                consumed: *consumed,
                lease_expires_at: lease.map(Millis),
            })
            .collect(),
    }))
}

/// What a deletion found.
#[derive(Serialize, JsonSchema)]
struct MessageDeleted {
    /// Whether the message was there.
    success: bool,
    /// As sent.
    #[serde(rename = "partitionId")]
    partition_id: String,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    #[schemars(extend("enum" = ["Message deleted successfully", "Message not found"]))]
    message: &'static str,
}

/// Deleting answers 200 whether or not the message was there, as Queen does.
async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Answer<MessageDeleted>, ApiError> {
    let id = partition_id(&pid)?;
    let done = s.service.messages().delete(&who.tenant, id, &txid).await?;
    let (success, message) = match done {
        Done::Deleted => (true, "Message deleted successfully"),
        _ => (false, "Message not found"),
    };
    Ok(Answer(MessageDeleted {
        success,
        partition_id: pid,
        transaction_id: txid,
        message,
    }))
}

/// The copy a retry appended.
#[derive(Serialize, JsonSchema)]
struct Retried {
    success: True,
    /// As sent.
    #[serde(rename = "partitionId")]
    partition_id: String,
    /// The original's.
    #[serde(rename = "transactionId")]
    transaction_id: String,
    copy: RetryCopy,
    #[schemars(extend("const" = RETRIED))]
    message: &'static str,
}

const RETRIED: &str = "A copy of the message was appended to its partition";

/// The copy's ids.
#[derive(Serialize, JsonSchema)]
struct RetryCopy {
    #[serde(rename = "messageId")]
    message_id: Uuid,
    /// `<id>:retry:<uuid>`.
    #[serde(rename = "transactionId")]
    transaction_id: String,
}

/// Appends a copy of the message (new ids, every group reads it) and says which.
async fn retry(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Answer<Retried>, ApiError> {
    let id = partition_id(&pid)?;
    match s.service.messages().retry(&who.tenant, id, &txid).await? {
        Done::Retried {
            message_id,
            transaction_id,
        } => Ok(Answer(Retried {
            success: True,
            partition_id: pid,
            transaction_id: txid,
            copy: RetryCopy {
                message_id,
                transaction_id,
            },
            message: RETRIED,
        })),
        _ => Err(not_found()),
    }
}

/// The dead letter a move filed.
#[derive(Serialize, JsonSchema)]
struct DeadLettered {
    success: True,
    /// As sent.
    #[serde(rename = "partitionId")]
    partition_id: String,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    /// The group the dead letter was filed for.
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    #[schemars(extend("const" = DEAD_LETTERED))]
    message: &'static str,
}

const DEAD_LETTERED: &str = "Message moved to the dead-letter queue and deleted from the log";

/// `?consumerGroup=`: queue mode's when absent or empty.
fn dlq_group(p: &Params) -> Result<Option<&str>, ApiError> {
    Ok(p.read::<DlqQuery>()?.consumer_group)
}

/// Files a dead letter for `?consumerGroup=` (queue mode by default) and deletes the message
/// from the log, in one transaction.
async fn to_dlq(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
    p: Params,
) -> Result<Answer<DeadLettered>, ApiError> {
    let id = partition_id(&pid)?;
    let group = dlq_group(&p)?;
    match s
        .service
        .messages()
        .to_dlq(&who.tenant, id, &txid, group)
        .await?
    {
        Done::DeadLettered { group } => Ok(Answer(DeadLettered {
            success: True,
            partition_id: pid,
            transaction_id: txid,
            consumer_group: group,
            message: DEAD_LETTERED,
        })),
        _ => Err(not_found()),
    }
}
