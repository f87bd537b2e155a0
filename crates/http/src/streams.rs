//! `/streams/v1/*`: the server side of Queen's streaming SDK (`queen.streams`, spec §16):
//! registering a query, a cycle (state operations, sink pushes and the source ack in ONE
//! transaction; see `regent_service::streams`), and reading state. Bodies and answers use
//! snake_case, as Queen's do. Two read routes of Regent's own list queries and their
//! partitions for the console.

use axum::extract::State as AxState;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use regent_rules::naming::QUEUE_MODE;
use regent_rules::status::AckStatus;
use regent_rules::streams::{cycle_digest, StateOp, MAX_STATE_KEY_BYTES, MAX_STATE_VALUE_BYTES};
use regent_service::streams::{
    AckDone, Applied, Cycle, CycleAck, CycleOutcome, Register, Registered, StateFilter, StateValue,
    StoredState, StreamPartition, StreamQuery,
};

use super::answer::{bytes, Answer, Millis, Pagination, Rendered, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::push::{self, parse_item, PushResult};
use super::read;
use super::routes::{route, Entry, Level::*};
use super::State;

const TAG: Tag = (
    "streams",
    "Queen Streams: stream queries, their cycles (state, sink pushes and the source ack in one transaction) and their state.",
);

/// A query's partitions page 100 at a time by default, at most 1,000.
const PARTITIONS: Paging = Paging {
    default: 100,
    max: 1000,
};

/// The most state rows one read answers, when it asks for a limit.
const MAX_STATE_LIMIT: i64 = 10_000;

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::POST, "/streams/v1/queries", ReadWrite, register)
            .doc(op("Register a stream query")
                .body_of::<RegisterBody>(true, "The query.")
                .fails(400, "`request body must be a JSON object`, `name is required`, `source_queue is required`, `config_hash is required`, `<field> must be a string`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`, `reset must be a boolean`; `Empty request body`, `Invalid JSON: …`.")
                .answers::<RegisteredAnswer>(200, "Registered.")
                .answers::<ConflictAnswer>(409, "Another `config_hash` is registered under the name; nothing changed."))
            .reads_body(
                &[r#"{"name": "orders.per-minute", "source_queue": "orders", "config_hash": "9f2c", "sink_queue": "orders.totals", "reset": false}"#],
                |b| b.json_fields_first().and_then(|v| {
                    parse_register(&read::fields(&v)?)?;
                    b.no_nul(&v)
                }),
            ),
        route(M::GET, "/streams/v1/queries", ReadOnly, list)
            .doc(op("Stream queries")
                .answers::<QueryList>(200, "The queries."))
            .reads_nothing(),
        route(M::GET, "/streams/v1/queries/{query_id}/partitions", ReadOnly, partitions)
            .doc(op("A stream query's partitions (the query by its id or by its name)")
                .paged(PARTITIONS, "Partitions")
                .fails(404, "`query not found`.")
                .answers::<PartitionList>(200, "A page of partitions."))
            .reads_request(&["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d?limit=10"],
                |PathParams(id): PathParams<String>, p: Params| async move {
                    let _ = (id, p.page(PARTITIONS));
                }),
        route(M::POST, "/streams/v1/cycle", ReadWrite, cycle)
            .doc(op("Commit a stream cycle")
                .body_of::<CycleFields>(true, "The cycle.")
                .quota()
                .fails(400, "`request body must be a JSON object`, `query_id is required`, `partition_id is required`, `query_id must be a UUID`, `partition_id must be a UUID`, `consumer_group must be a string`, `state_ops must be an array`, `push_items must be an array`, `state_ops[<i>].type must be upsert or delete`, `state_ops[<i>].key is required`, `state_ops[<i>].key is longer than 2048 bytes`, `state_ops[<i>].key must not contain NUL`, `ack must be an object`, `ack.transactionId is required`, `release_lease must be a boolean`, a push item's texts (as on the push route); `Empty request body`, `Invalid JSON: …`.")
                .fails(413, "`state_ops[<i>].value is <n> bytes, over the limit of 1048576 bytes`; `A request of <n> items is over the limit of <max> items (MAX_PUSH_ITEMS)` (state operations and push items together).")
                .answers::<CycleAnswer>(200, "Committed (`success: true`), or refused with nothing written (`success: false`)."))
            .reads_body(
                &[
                    r#"{"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6e",
                        "consumer_group": "streams.q",
                        "state_ops": [{"type": "upsert", "key": "k", "value": {"acc": 3, "windowEnd": 1767225600000}},
                                      {"type": "delete", "key": "k2"}],
                        "push_items": [{"queue": "sink", "partition": "p", "payload": {"sum": 3}}],
                        "ack": {"transactionId": "t-1", "leaseId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6f", "status": "completed", "count": 2},
                        "release_lease": true}"#,
                    r#"{"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6e", "ack": null}"#,
                ],
                |b| parse_cycle(b, &push::fuzz_principal(), push::FUZZ_MAX_ITEMS).map(drop),
            ),
        route(M::POST, "/streams/v1/state/get", ReadOnly, state_get)
            .doc(op("Read a stream query's state")
                .body_of::<StateGetBody>(true, "Which rows.")
                .fails(400, "`request body must be a JSON object`, `query_id is required`, `partition_id is required`, `query_id must be a UUID`, `partition_id must be a UUID`, `keys must be an array of strings`, `keys must not contain NUL`, `key_prefix must be a string`, `key_prefix must not contain NUL`, `ripe_at_or_before must be a number`, `limit must be an integer from 1 to 10000`; `Empty request body`, `Invalid JSON: …`.")
                .answers::<StateAnswer>(200, "The rows."))
            .reads_body(
                &[r#"{"query_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d", "partition_id": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6e",
                      "keys": ["a", "b"], "key_prefix": "w\u001f", "ripe_at_or_before": 1767225600000, "limit": 10}"#],
                |b| b.json_fields_first().and_then(|v| parse_state_get(&v).and_then(|_| b.no_nul(&v))),
            ),
    ]
}

/// A name as the queue routes take one (at most 512 bytes, no NUL: it is stored as text).
fn named<'a>(field: &str, s: &'a str) -> Result<&'a str, ApiError> {
    read::short(field, s, push::MAX_NAME_BYTES)
}

// ---------------------------------------------------------------- registration

/// `POST /streams/v1/queries`.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "StreamRegister")]
struct RegisterBody {
    /// The query's id as the client names it.
    #[schemars(with = "String")]
    name: Option<Value>,
    #[schemars(with = "String")]
    source_queue: Option<Value>,
    /// The client's hash of the pipeline's configuration.
    #[schemars(with = "String")]
    config_hash: Option<Value>,
    #[schemars(with = "Option<String>")]
    sink_queue: Option<Value>,
    #[schemars(with = "Option<bool>", extend("default" = false))]
    reset: Option<Value>,
}

fn parse_register(f: &RegisterBody) -> Result<Register<'_>, ApiError> {
    fn name<'a>(v: &'a Option<Value>, field: &str) -> Result<&'a str, ApiError> {
        named(field, read::required(v.as_ref(), field)?)
    }
    let sink_queue = read::optional(f.sink_queue.as_ref(), "sink_queue")?;
    Ok(Register {
        name: name(&f.name, "name")?,
        source_queue: name(&f.source_queue, "source_queue")?,
        sink_queue: sink_queue.map(|s| named("sink_queue", s)).transpose()?,
        config_hash: name(&f.config_hash, "config_hash")?,
        reset: read::flag(f.reset.as_ref(), "reset", false)?,
    })
}

/// A query registered.
#[derive(Serialize, JsonSchema)]
struct RegisteredAnswer {
    success: True,
    query_id: Uuid,
    name: String,
    config_hash: String,
    /// The name was new.
    fresh: bool,
    /// The query's state was deleted (`reset: true` with another hash).
    reset: bool,
}

/// A registration refused: another config hash is stored under the name.
#[derive(Serialize, JsonSchema)]
struct ConflictAnswer {
    #[schemars(extend("const" = false))]
    success: bool,
    query_id: Uuid,
    name: String,
    /// `config_hash mismatch: registered <stored>, sent <sent>; pass reset to start over`.
    error: String,
}

async fn register(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let v = body.json_fields_first()?;
    let f = read::fields(&v)?;
    let r = parse_register(&f)?;
    body.no_nul(&v)?;
    Ok(match s.service.streams().register(&who.tenant, &r).await? {
        Registered::Done {
            query,
            fresh,
            reset,
        } => Answer(RegisteredAnswer {
            success: True,
            query_id: query.id,
            name: query.name,
            config_hash: query.config_hash,
            fresh,
            reset,
        })
        .into_response(),
        Registered::Conflict { query } => Answer(ConflictAnswer {
            success: false,
            query_id: query.id,
            error: format!(
                "config_hash mismatch: registered {}, sent {}; pass reset to start over",
                query.config_hash, r.config_hash
            ),
            name: query.name,
        })
        .with_status(StatusCode::CONFLICT),
    })
}

// ---------------------------------------------------------------- listings

/// A stream query as registered.
#[derive(Serialize, JsonSchema)]
struct QueryView {
    query_id: Uuid,
    name: String,
    source_queue: String,
    sink_queue: Option<String>,
    config_hash: String,
    created_at: Millis,
    updated_at: Millis,
}

impl From<StreamQuery> for QueryView {
    fn from(q: StreamQuery) -> QueryView {
        QueryView {
            query_id: q.id,
            name: q.name,
            source_queue: q.source_queue,
            sink_queue: q.sink_queue,
            config_hash: q.config_hash,
            created_at: q.created_at.into(),
            updated_at: q.updated_at.into(),
        }
    }
}

/// The tenant's queries.
#[derive(Serialize, JsonSchema)]
struct QueryList {
    queries: Vec<QueryView>,
}

async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<QueryList>, ApiError> {
    let queries = s.service.streams().queries(&who.tenant).await?;
    Ok(Answer(QueryList {
        queries: queries.into_iter().map(QueryView::from).collect(),
    }))
}

/// One source partition of a query.
#[derive(Serialize, JsonSchema)]
struct PartitionView {
    partition_id: Uuid,
    /// The partition's name.
    partition: String,
    /// State rows the query holds for it now.
    state_rows: i64,
    /// Cycles committed (replays not counted).
    cycles: i64,
    /// State operations those cycles applied.
    state_ops: i64,
    last_cycle_at: Option<Millis>,
}

impl From<StreamPartition> for PartitionView {
    fn from(p: StreamPartition) -> PartitionView {
        PartitionView {
            partition_id: p.partition_id,
            partition: p.partition,
            state_rows: p.state_rows,
            cycles: p.cycles,
            state_ops: p.state_ops,
            last_cycle_at: p.last_cycle_at.map(Millis),
        }
    }
}

/// A page of a query's partitions.
#[derive(Serialize, JsonSchema)]
struct PartitionList {
    query: QueryView,
    partitions: Vec<PartitionView>,
    total: i64,
    pagination: Pagination,
}

async fn partitions(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(id): PathParams<String>,
    p: Params,
) -> Result<Answer<PartitionList>, ApiError> {
    let page = p.page(PARTITIONS);
    let (query, rows, total) = s
        .service
        .streams()
        .partitions(&who.tenant, &id, page)
        .await?;
    Ok(Answer(PartitionList {
        query: query.into(),
        partitions: rows.into_iter().map(PartitionView::from).collect(),
        total,
        pagination: page.into(),
    }))
}

// ---------------------------------------------------------------- cycle

// Each field is read as the JSON text sent.
/// `POST /streams/v1/cycle`: state operations, sink pushes and the source ack, committed in
/// one transaction.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "StreamCycle")]
struct CycleFields<'a> {
    #[serde(borrow)]
    #[schemars(with = "Uuid")]
    query_id: Option<&'a RawValue>,
    /// The source partition.
    #[serde(borrow)]
    #[schemars(with = "Uuid")]
    partition_id: Option<&'a RawValue>,
    #[serde(borrow)]
    #[schemars(with = "Option<String>", extend("default" = QUEUE_MODE))]
    consumer_group: Option<&'a RawValue>,
    #[serde(borrow)]
    #[schemars(with = "Vec<StateOpFields>", default)]
    state_ops: Option<&'a RawValue>,
    /// As on the push route; the payload under `payload`.
    #[serde(borrow)]
    #[schemars(with = "Vec<push::Fields>", default)]
    push_items: Option<&'a RawValue>,
    #[serde(borrow)]
    #[schemars(with = "Option<CycleAckFields>")]
    ack: Option<&'a RawValue>,
    #[serde(borrow)]
    #[schemars(with = "Option<bool>", extend("default" = true))]
    release_lease: Option<&'a RawValue>,
}

/// One state operation of a cycle.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "StreamStateOp")]
struct StateOpFields<'a> {
    #[serde(rename = "type")]
    #[schemars(with = "String", extend("enum" = ["upsert", "delete"]))]
    kind: Option<Value>,
    #[schemars(with = "String")]
    key: Option<Value>,
    /// Any JSON; a numeric `windowEnd` (epoch ms) makes the row visible to
    /// `ripe_at_or_before`.
    #[serde(borrow)]
    #[schemars(with = "Value", default)]
    value: Option<&'a RawValue>,
}

/// A cycle's ack of its source message.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "StreamCycleAck")]
struct CycleAckFields {
    #[schemars(with = "String")]
    transaction_id: Option<Value>,
    #[schemars(with = "Option<String>")]
    lease_id: Option<Value>,
    #[schemars(with = "Option<String>", extend("default" = "completed"))]
    #[schemars(extend("enum" = ["completed", "success", "failed", "dlq", null]))]
    status: Option<Value>,
    // Sent by the client, not read.
    #[schemars(with = "Option<i64>")]
    #[allow(dead_code)]
    count: Option<Value>,
    #[schemars(with = "Option<String>")]
    error: Option<Value>,
}

/// A small field as a tree (`null` for absent).
fn small(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

/// An array field as its elements' text; absent or null is empty.
fn elements<'a>(raw: Option<&'a RawValue>, field: &str) -> Result<Vec<&'a RawValue>, ApiError> {
    match raw {
        None => Ok(vec![]),
        Some(r) if r.get() == "null" => Ok(vec![]),
        Some(r) => serde_json::from_str(r.get())
            .map_err(|_| ApiError::bad_request(format!("{field} must be an array"))),
    }
}

fn parse_cycle(body: &RawBody, who: &Principal, max: usize) -> Result<Cycle, ApiError> {
    let raw = body.raw_json()?;
    let f: CycleFields<'_> = serde_json::from_str(raw.get())
        .map_err(|_| ApiError::bad_request("request body must be a JSON object"))?;
    let query_id = read::uuid(Some(&small(f.query_id)), "query_id")?;
    let partition_id = read::uuid(Some(&small(f.partition_id)), "partition_id")?;
    let group = read::optional(Some(&small(f.consumer_group)), "consumer_group")?
        .unwrap_or(QUEUE_MODE)
        .to_string();
    let ops = elements(f.state_ops, "state_ops")?;
    let items = elements(f.push_items, "push_items")?;
    if ops.len() + items.len() > max {
        return Err(ApiError::TooManyItems {
            items: ops.len() + items.len(),
            max,
        });
    }
    let state_ops = ops
        .iter()
        .enumerate()
        .map(|(i, op)| parse_state_op(i, op))
        .collect::<Result<_, _>>()?;
    let pushes = items
        .iter()
        .map(|item| Ok((parse_item(item, &["payload", "data"], who)?, sends_id(item))))
        .collect::<Result<_, ApiError>>()?;
    let release_lease = read::flag(Some(&small(f.release_lease)), "release_lease", true)?;
    Ok(Cycle {
        query_id,
        partition_id,
        group,
        state_ops,
        pushes,
        ack: parse_ack(small(f.ack))?,
        release_lease,
        digest: cycle_digest(&body.0),
    })
}

/// Whether a push item carries its own transaction id.
fn sends_id(item: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Id {
        #[serde(rename = "transactionId")]
        id: Option<Value>,
    }
    serde_json::from_str::<Id>(item.get())
        .ok()
        .and_then(|i| i.id)
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()))
}

fn parse_state_op(i: usize, op: &RawValue) -> Result<StateOp<StateValue>, ApiError> {
    let f: StateOpFields<'_> = serde_json::from_str(op.get()).map_err(|_| {
        ApiError::bad_request(format!("state_ops[{i}].type must be upsert or delete"))
    })?;
    let key = match f.key {
        Some(Value::String(k)) if !k.is_empty() => {
            read::no_nul(&format!("state_ops[{i}].key"), &k)?;
            k
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "state_ops[{i}].key is required"
            )))
        }
    };
    if key.len() > MAX_STATE_KEY_BYTES {
        return Err(ApiError::bad_request(format!(
            "state_ops[{i}].key is longer than {MAX_STATE_KEY_BYTES} bytes"
        )));
    }
    match f.kind.as_ref().and_then(Value::as_str) {
        Some("upsert") => {
            let json = f.value.map_or("null", RawValue::get).to_string();
            if json.len() > MAX_STATE_VALUE_BYTES {
                return Err(ApiError::TooLarge(format!(
                    "state_ops[{i}].value is {} bytes, over the limit of {MAX_STATE_VALUE_BYTES} bytes",
                    json.len()
                )));
            }
            let window_end = window_end(&json);
            Ok(StateOp::Upsert {
                key,
                value: StateValue { json, window_end },
            })
        }
        Some("delete") => Ok(StateOp::Delete { key }),
        _ => Err(ApiError::bad_request(format!(
            "state_ops[{i}].type must be upsert or delete"
        ))),
    }
}

/// A state value's `windowEnd`, when it is an object with a finite numeric one.
fn window_end(json: &str) -> Option<f64> {
    #[derive(Deserialize)]
    struct W {
        #[serde(rename = "windowEnd")]
        window_end: Option<Value>,
    }
    serde_json::from_str::<W>(json)
        .ok()?
        .window_end?
        .as_f64()
        .filter(|f| f.is_finite())
}

fn parse_ack(v: Value) -> Result<Option<CycleAck>, ApiError> {
    let f: CycleAckFields = match v {
        Value::Null => return Ok(None),
        v @ Value::Object(_) => read::fields(&v)?,
        _ => return Err(ApiError::bad_request("ack must be an object")),
    };
    let transaction_id = match f.transaction_id {
        Some(Value::String(t)) if !t.is_empty() => t,
        _ => return Err(ApiError::bad_request("ack.transactionId is required")),
    };
    let text = |v: Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_string);
    let status = match f.status {
        None => Ok(AckStatus::Completed),
        Some(Value::String(s)) => match s.as_str() {
            "completed" | "success" => Ok(AckStatus::Completed),
            "failed" | "dlq" => Ok(AckStatus::Dlq),
            other => Err(other.to_string()),
        },
        Some(other) => Err(other.to_string()),
    };
    Ok(Some(CycleAck {
        transaction_id,
        lease_id: text(f.lease_id).filter(|l| !l.is_empty()),
        status,
        error: text(f.error),
    }))
}

/// A cycle's answer. Committed: `success: true` with what it did; refused: `success: false`,
/// `error`, and nothing done.
#[derive(Serialize, JsonSchema)]
struct CycleAnswer<'a> {
    success: bool,
    query_id: Uuid,
    partition_id: Uuid,
    /// The source queue (null when the query was not found).
    #[serde(rename = "queueName")]
    queue_name: Option<&'a str>,
    state_ops_applied: usize,
    /// One per push item, in order, as the push route answers them.
    push_results: Vec<PushResult<'a>>,
    ack_result: Option<AckResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// What the cycle's ack did.
#[derive(Serialize, JsonSchema)]
struct AckResult {
    success: True,
    /// Messages the cursor moved past.
    count: i64,
    lease_released: bool,
    /// The message was dead-lettered (`failed`/`dlq`).
    dlq: bool,
}

impl From<AckDone> for AckResult {
    fn from(a: AckDone) -> AckResult {
        AckResult {
            success: True,
            count: a.count,
            lease_released: a.lease_released,
            dlq: a.dlq,
        }
    }
}

async fn cycle(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let cycle = parse_cycle(&body, &who, s.config.max_push_items)?;
    drop(body);
    let (query_id, partition_id) = (cycle.query_id, cycle.partition_id);
    let render = |a: &Applied<'_>| {
        bytes(&CycleAnswer {
            success: true,
            query_id,
            partition_id,
            queue_name: Some(a.queue),
            state_ops_applied: a.state_ops,
            push_results: a
                .pushes
                .iter()
                .zip(a.verdicts)
                .enumerate()
                .map(|(i, (item, v))| PushResult::of(i, item, v))
                .collect(),
            ack_result: a.ack.map(AckResult::from),
            error: None,
        })
    };
    Ok(
        match s
            .service
            .streams()
            .cycle(&who.tenant, cycle, &render)
            .await?
        {
            CycleOutcome::Answered { answer, .. } => Rendered(answer).into_response(),
            CycleOutcome::Refused { queue, error } => Answer(CycleAnswer {
                success: false,
                query_id,
                partition_id,
                queue_name: queue.as_deref(),
                state_ops_applied: 0,
                push_results: vec![],
                ack_result: None,
                error: Some(error),
            })
            .into_response(),
        },
    )
}

// ---------------------------------------------------------------- state

/// A state read, parsed.
struct StateGet {
    query_id: Uuid,
    partition_id: Uuid,
    keys: Vec<String>,
    key_prefix: Option<String>,
    ripe_at_or_before: Option<f64>,
    limit: Option<i64>,
}

/// `POST /streams/v1/state/get`: which rows of a query's partition.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "StreamStateGet")]
struct StateGetBody {
    #[schemars(with = "Uuid")]
    query_id: Option<Value>,
    #[schemars(with = "Uuid")]
    partition_id: Option<Value>,
    #[schemars(with = "Option<Vec<String>>")]
    keys: Option<Value>,
    #[schemars(with = "Option<String>")]
    key_prefix: Option<Value>,
    #[schemars(with = "Option<serde_json::Number>")]
    ripe_at_or_before: Option<Value>,
    #[schemars(with = "Option<i64>", range(min = 1, max = MAX_STATE_LIMIT))]
    limit: Option<Value>,
}

fn parse_state_get(v: &Value) -> Result<StateGet, ApiError> {
    let f: StateGetBody = read::fields(v)?;
    let query_id = read::uuid(f.query_id.as_ref(), "query_id")?;
    let partition_id = read::uuid(f.partition_id.as_ref(), "partition_id")?;
    let keys = read::strings(f.keys.as_ref(), "keys")?
        .unwrap_or_default()
        .into_iter()
        .map(|k| read::no_nul("keys", k).map(str::to_string))
        .collect::<Result<_, _>>()?;
    let key_prefix = read::optional(f.key_prefix.as_ref(), "key_prefix")?
        .map(|p| read::no_nul("key_prefix", p).map(str::to_string))
        .transpose()?;
    let ripe_at_or_before = read::number(f.ripe_at_or_before.as_ref(), "ripe_at_or_before")?;
    let limit = read::int_in(f.limit.as_ref(), "limit", 1..=MAX_STATE_LIMIT)?;
    Ok(StateGet {
        query_id,
        partition_id,
        keys,
        key_prefix,
        ripe_at_or_before,
        limit,
    })
}

/// One state row.
#[derive(Serialize, JsonSchema)]
struct StateRowView {
    key: String,
    /// The value as the cycle wrote it.
    #[schemars(with = "Value")]
    value: Box<RawValue>,
    updated_at: Millis,
}

impl TryFrom<StoredState> for StateRowView {
    type Error = ApiError;
    fn try_from(r: StoredState) -> Result<StateRowView, ApiError> {
        let value = RawValue::from_string(r.value)
            .map_err(|e| ApiError::Internal(format!("a stored state value is not JSON: {e}")))?;
        Ok(StateRowView {
            key: r.key,
            value,
            updated_at: r.updated_at.into(),
        })
    }
}

/// The rows read.
#[derive(Serialize, JsonSchema)]
struct StateAnswer {
    success: True,
    rows: Vec<StateRowView>,
}

async fn state_get(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<StateAnswer>, ApiError> {
    let v = body.json_fields_first()?;
    let g = parse_state_get(&v)?;
    body.no_nul(&v)?;
    let filter = StateFilter {
        keys: &g.keys,
        key_prefix: g.key_prefix.as_deref(),
        ripe_at_or_before: g.ripe_at_or_before,
        limit: g.limit,
    };
    let rows = s
        .service
        .streams()
        .state(&who.tenant, g.query_id, g.partition_id, &filter)
        .await?;
    Ok(Answer(StateAnswer {
        success: True,
        rows: rows
            .into_iter()
            .map(StateRowView::try_from)
            .collect::<Result<_, _>>()?,
    }))
}
