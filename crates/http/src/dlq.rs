//! `GET /api/v1/dlq`: dead letters, newest failure first, with the `total` the Python client
//! reads; and Regent's bulk routes `POST /api/v1/dlq/requeue` and `POST /api/v1/dlq/delete`.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use super::answer::{Answer, Millis, Pagination};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::read;
use super::routes::{route, Entry, Level::*};
use super::time::Instant;
use super::State;
use regent_service::dead_letters::{
    Bulk, BulkItem, BulkOutcome, BulkVerdict, DeadLetter as Letter, Filter, Selector, MAX_BULK,
};

const TAG: Tag = (
    "dead letters",
    "Dead letters: payload snapshots of messages a consumer group gave up on, which outlive the log; listed, requeued and deleted.",
);

/// The listing pages 100 dead letters by default, at most 1,000.
const LISTING: Paging = Paging {
    default: 100,
    max: 1000,
};

/// Valid bulk bodies, for the fuzzer.
const BULK_SEEDS: &[&str] = &[
    r#"{"ids": [1, 2, 3], "dryRun": true}"#,
    r#"{"queue": "q", "consumerGroup": "g", "from": "2026-01-01T00:00:00Z",
        "to": "2026-02-01T00:00:00Z", "limit": 100}"#,
    r#"{"all": true}"#,
    r#"{"reason": "", "partition": "Default"}"#,
];

/// A listing's filter, as [`list_filter`] reads it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ListFilter<'a> {
    /// Exact queue name.
    #[serde(borrow)]
    queue: Option<&'a str>,
    /// Exact group name.
    #[serde(borrow)]
    consumer_group: Option<&'a str>,
    /// Exact partition name.
    #[serde(borrow)]
    partition: Option<&'a str>,
    /// On the failure time, inclusive.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    from: Instant,
    /// On the failure time.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    to: Instant,
    /// The reason exactly, as the bulk requeue and delete select it (a Regent extension).
    #[serde(borrow)]
    reason: Option<&'a str>,
}

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::GET, "/api/v1/dlq", ReadOnly, list)
            .doc(op("List dead letters")
                .query_of::<ListFilter>()
                .paged(LISTING, "Dead letters")
                .fails(400, "`from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
                .answers::<DeadLetters>(200, "A page of dead letters."))
            .reads_request(
                &["?queue=q&consumerGroup=g&partition=p&reason=boom&from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&limit=10"],
                |p: Params| async move { list_filter(&p).map(drop) },
            ),
        route(M::POST, "/api/v1/dlq/requeue", ReadWrite, requeue)
            .doc(op("Requeue dead letters as new messages")
                .body_of::<Selection>(true, "The selection.")
                .quota()
                .fails(400, "`ids or a filter is required`, `unknown field <k>: expected one of …`, `ids must be an array of dead-letter ids (integers)`, `<key> must be a string`, `<key> must be a boolean`, `<key> must be an ISO-8601 timestamp`, `limit must be an integer from 1 to 10000`, `request body must be a JSON object`; `Invalid JSON: …`.")
                .fails(409, "Under push maintenance, or while its buffered pushes wait to be appended, a requeue (dry run included) is refused whole: `Push maintenance is on: dead letters cannot be requeued until it is switched off and the buffered pushes are appended`.")
                .answers::<DeadLettersRequeued>(200, "What was (or, dry, would be) done."))
            .reads_body(BULK_SEEDS, BulkBody::parse),
        route(M::POST, "/api/v1/dlq/delete", ReadWrite, delete)
            .doc(op("Delete dead letters")
                .body_of::<Selection>(true, "The selection.")
                .fails(400, "`ids or a filter is required`, `unknown field <k>: expected one of …`, the field texts of the requeue route; `Invalid JSON: …`.")
                .answers::<DeadLettersDeleted>(200, "What was (or, dry, would be) done."))
            .reads_body(BULK_SEEDS, BulkBody::parse),
    ]
}

/// The listing's filter and page.
fn list_filter(p: &Params) -> Result<Filter<'_>, ApiError> {
    let f: ListFilter = p.read()?;
    let page = p.page(LISTING);
    Ok(Filter {
        queue: f.queue,
        group: f.consumer_group,
        partition: f.partition,
        from: f.from.get()?,
        to: f.to.get()?,
        reason: f.reason,
        limit: page.limit,
        offset: page.offset,
    })
}

/// `GET /api/v1/dlq`: a page of dead letters and how many match in all.
#[derive(Serialize, JsonSchema)]
struct DeadLetters {
    messages: Vec<DeadLetter>,
    pagination: Pagination,
    /// Every dead letter the filter matches.
    total: i64,
}

/// One dead letter: where its message was, why it was given up on, and its payload snapshot.
#[derive(Serialize, JsonSchema)]
struct DeadLetter {
    /// Regent's id of the dead letter, for the bulk routes.
    #[serde(rename = "deadLetterId")]
    dead_letter_id: i64,
    /// The message's id.
    id: Uuid,
    #[serde(rename = "transactionId")]
    transaction_id: String,
    #[serde(rename = "partitionId")]
    partition_id: Uuid,
    queue: String,
    partition: String,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    /// The reason: the nack's `error`, else `Retries exhausted`.
    #[serde(rename = "errorMessage")]
    error_message: String,
    #[serde(rename = "retryCount")]
    retry_count: i32,
    /// The payload snapshot (it outlives the log).
    #[schemars(with = "Value")]
    data: Box<RawValue>,
    #[serde(rename = "producerSub")]
    producer_sub: Option<String>,
    #[serde(rename = "traceId")]
    trace_id: Option<Uuid>,
    /// When the message was pushed.
    #[serde(rename = "createdAt")]
    created_at: Millis,
    /// When the dead letter was filed.
    #[serde(rename = "failedAt")]
    failed_at: Millis,
}

impl From<Letter> for DeadLetter {
    fn from(d: Letter) -> DeadLetter {
        let m = d.message.message;
        DeadLetter {
            dead_letter_id: d.id,
            id: m.message_id,
            transaction_id: m.transaction_id,
            partition_id: d.partition_id,
            queue: d.queue,
            partition: d.partition,
            consumer_group: d.group,
            error_message: d.error,
            retry_count: d.retry_count,
            data: m.payload,
            producer_sub: m.producer_sub,
            trace_id: m.trace_id,
            created_at: Millis(d.message.created_at),
            failed_at: Millis(d.failed_at),
        }
    }
}

async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<DeadLetters>, ApiError> {
    let filter = list_filter(&p)?;
    let (letters, total) = s.service.dead_letters().list(&who.tenant, &filter).await?;
    Ok(Answer(DeadLetters {
        messages: letters.into_iter().map(DeadLetter::from).collect(),
        pagination: Pagination {
            limit: filter.limit,
            offset: filter.offset,
        },
        total,
    }))
}

/// The bulk routes' body, read: a selector (ids, a filter, both, or `all`), `limit`, `dryRun`.
struct BulkBody {
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

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "BulkSelector")]
/// What to take: `ids`, or a filter, or both (ids AND filter), or `all`. A body that selects
/// nothing (empty, `{}`, only `dryRun`) is a 400 `ids or a filter is required`; an unknown key
/// is a 400 (a misspelt filter must not widen the call).
struct Selection {
    /// `deadLetterId`s.
    #[schemars(with = "Option<Vec<i64>>")]
    ids: Option<Value>,
    /// Exact queue name.
    #[schemars(with = "Option<String>")]
    queue: Option<Value>,
    /// Exact partition name.
    #[schemars(with = "Option<String>")]
    partition: Option<Value>,
    /// Exact group name.
    #[schemars(with = "Option<String>")]
    consumer_group: Option<Value>,
    /// The stored error text, exactly.
    #[schemars(with = "Option<String>")]
    reason: Option<Value>,
    /// On `failedAt`, inclusive.
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    from: Option<Value>,
    /// On `failedAt`.
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    to: Option<Value>,
    /// Every dead letter of the tenant.
    #[schemars(with = "Option<bool>", extend("default" = false))]
    all: Option<Value>,
    /// Answer what the call would do; write nothing.
    #[schemars(with = "Option<bool>", extend("default" = false))]
    dry_run: Option<Value>,
    /// Most dead letters one call takes, oldest failure first.
    #[schemars(with = "Option<i64>", extend("minimum" = 1, "maximum" = MAX_BULK, "default" = MAX_BULK))]
    limit: Option<Value>,
}

impl BulkBody {
    fn parse(body: &RawBody) -> Result<BulkBody, ApiError> {
        let v = body.json_or_empty_object()?;
        // Any key the type does not name is refused: a misspelt filter next to `"all": true`
        // must not widen the call to every dead letter.
        let known = read::names::<Selection>();
        if let Some(k) = read::object(&v)?
            .keys()
            .find(|k| !known.contains(&k.as_str()))
        {
            return Err(ApiError::bad_request(format!(
                "unknown field {k}: expected one of {}",
                known.join(", ")
            )));
        }
        let s: Selection = read::fields(&v)?;
        // A string filter; `""` is a value like any other (it matches the empty name or reason).
        let text =
            |v: &Option<Value>, key| read::text(v.as_ref(), key).map(|t| t.map(str::to_string));
        let b = BulkBody {
            ids: ids(s.ids.as_ref())?,
            queue: text(&s.queue, "queue")?,
            partition: text(&s.partition, "partition")?,
            group: text(&s.consumer_group, "consumerGroup")?,
            reason: text(&s.reason, "reason")?,
            from: read::instant(s.from.as_ref(), "from")?,
            to: read::instant(s.to.as_ref(), "to")?,
            all: read::flag(s.all.as_ref(), "all", false)?,
            limit: read::int_in(s.limit.as_ref(), "limit", 1..=MAX_BULK)?,
            dry_run: read::flag(s.dry_run.as_ref(), "dryRun", false)?,
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

/// What both bulk routes count.
#[derive(Serialize, JsonSchema)]
struct Tally {
    #[serde(rename = "dryRun")]
    dry_run: bool,
    /// Dead letters considered (one item each).
    matched: usize,
    /// Dead letters whose message already has a copy (another group's dead letter of the same message): removed, not copied again.
    duplicates: usize,
    gone: usize,
    /// More matched than `limit` (with ids: more distinct ids were sent).
    more: bool,
}

impl Tally {
    fn of(out: &BulkOutcome, dry_run: bool) -> Tally {
        Tally {
            dry_run,
            matched: out.items.len(),
            duplicates: count(out, |v| matches!(v, BulkVerdict::Duplicate(_))),
            gone: count(out, |v| *v == BulkVerdict::Gone),
            more: out.more,
        }
    }
}

fn count(out: &BulkOutcome, f: fn(&BulkVerdict) -> bool) -> usize {
    out.items.iter().filter(|i| f(&i.verdict)).count()
}

/// Which dead letter an item is, and where it was when the call found it.
#[derive(Serialize, JsonSchema)]
struct Considered {
    #[serde(rename = "deadLetterId")]
    dead_letter_id: i64,
    /// Null when gone.
    #[serde(rename = "transactionId")]
    transaction_id: Option<String>,
    /// Null when gone.
    #[serde(rename = "partitionId")]
    partition_id: Option<Uuid>,
    /// Null when gone.
    #[serde(rename = "consumerGroup")]
    consumer_group: Option<String>,
}

impl From<&BulkItem> for Considered {
    fn from(i: &BulkItem) -> Considered {
        let found = i.found.as_ref();
        Considered {
            dead_letter_id: i.dead_letter_id,
            transaction_id: found.map(|f| f.transaction_id.clone()),
            partition_id: found.map(|f| f.partition_id),
            consumer_group: found.map(|f| f.group.clone()),
        }
    }
}

fn verdict_name(v: BulkVerdict) -> &'static str {
    match v {
        BulkVerdict::Requeued(_) => "requeued",
        BulkVerdict::Duplicate(_) => "duplicate",
        BulkVerdict::Gone => "gone",
        BulkVerdict::Deleted => "deleted",
    }
}

/// `POST /api/v1/dlq/requeue`: what was (or, dry, would be) copied back.
#[derive(Serialize, JsonSchema)]
struct DeadLettersRequeued {
    #[serde(flatten)]
    tally: Tally,
    /// Dead letters copied back as new messages (and removed).
    requeued: usize,
    items: Vec<RequeuedItem>,
}

/// One dead letter a requeue considered.
#[derive(Serialize, JsonSchema)]
struct RequeuedItem {
    #[serde(flatten)]
    letter: Considered,
    /// `gone`: no dead letter of the tenant with that id matches any more (never filed, already requeued or deleted, or outside the filter); its other fields are null.
    #[schemars(extend("enum" = ["requeued", "duplicate", "gone"]))]
    verdict: &'static str,
    /// The copy (null in a dry run until one exists, and when gone).
    #[serde(rename = "messageId")]
    message_id: Option<Uuid>,
    /// The copy's transaction id, `requeue:<original message id>` (null when gone).
    #[serde(rename = "newTransactionId")]
    new_transaction_id: Option<String>,
}

impl From<&BulkItem> for RequeuedItem {
    fn from(i: &BulkItem) -> RequeuedItem {
        let copy = match i.verdict {
            BulkVerdict::Requeued(id) | BulkVerdict::Duplicate(id) => id,
            BulkVerdict::Gone | BulkVerdict::Deleted => None,
        };
        RequeuedItem {
            letter: Considered::from(i),
            verdict: verdict_name(i.verdict),
            message_id: copy,
            new_transaction_id: i.copy_transaction_id.clone(),
        }
    }
}

/// `POST /api/v1/dlq/delete`: what was (or, dry, would be) deleted.
#[derive(Serialize, JsonSchema)]
struct DeadLettersDeleted {
    #[serde(flatten)]
    tally: Tally,
    /// Dead letters deleted.
    deleted: usize,
    items: Vec<DeletedItem>,
}

/// One dead letter a deletion considered.
#[derive(Serialize, JsonSchema)]
struct DeletedItem {
    #[serde(flatten)]
    letter: Considered,
    /// `gone`: no dead letter of the tenant with that id matches any more (never filed, already requeued or deleted, or outside the filter); its other fields are null.
    #[schemars(extend("enum" = ["deleted", "gone"]))]
    verdict: &'static str,
}

/// `POST /api/v1/dlq/requeue`: the selected dead letters' snapshots appended to their
/// partitions as new messages, and the dead letters removed, in one transaction.
async fn requeue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<DeadLettersRequeued>, ApiError> {
    let b = BulkBody::parse(&body)?;
    let out = s
        .service
        .dead_letters()
        .requeue(&who.tenant, &b.bulk())
        .await?;
    Ok(Answer(DeadLettersRequeued {
        tally: Tally::of(&out, b.dry_run),
        requeued: count(&out, |v| matches!(v, BulkVerdict::Requeued(_))),
        items: out.items.iter().map(RequeuedItem::from).collect(),
    }))
}

/// `POST /api/v1/dlq/delete`: the selected dead letters deleted, in one transaction.
async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<DeadLettersDeleted>, ApiError> {
    let b = BulkBody::parse(&body)?;
    let out = s
        .service
        .dead_letters()
        .delete(&who.tenant, &b.bulk())
        .await?;
    Ok(Answer(DeadLettersDeleted {
        tally: Tally::of(&out, b.dry_run),
        deleted: count(&out, |v| *v == BulkVerdict::Deleted),
        items: out
            .items
            .iter()
            .map(|i| DeletedItem {
                letter: Considered::from(i),
                verdict: verdict_name(i.verdict),
            })
            .collect(),
    }))
}
