//! `/api/v1/traces`: trace events a consumer attaches to a message (`message.trace(...)` in
//! the clients' consume loops), and the three read routes. Read answers use snake_case keys,
//! as Queen's do.

use axum::extract::State as AxState;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::answer::{Answer, Millis, Pagination, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::{Paging, Params};
use super::path::PathParams;
use super::read;
use super::routes::{route, Entry, Level::*};
use super::State;
use regent_rules::naming::QUEUE_MODE;
use regent_service::traces::{self as service, TraceEvent};
use regent_service::Error;

const TAG: Tag = (
    "traces",
    "Trace events attached to messages, optionally labelled with trace names.",
);

const NOT_FOUND: &str = "Message not found";

/// The trace-name listing pages 50 names by default, at most 1,000.
const NAMES: Paging = Paging {
    default: 50,
    max: 1000,
};

/// The traces of a name page 100 at a time by default, at most 1,000.
const BY_NAME: Paging = Paging {
    default: 100,
    max: 1000,
};

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::POST, "/api/v1/traces", ReadWrite, record)
            .doc(op("Record a trace event")
                .body_of::<TraceBody>(true, "The event.")
                .fails(400, "`transactionId and partitionId are required`, `data is required`, `traceNames must be a string or an array of strings`, `<key> must be a string`; `Empty request body`, `Invalid JSON: …`.")
                .answers::<Recorded>(201, "Recorded.")
                .answers::<TraceNotFound>(404, "`Message not found`, in the shape the clients read."))
            .reads_body(&[
                r#"{"transactionId": "t", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                    "data": {"step": "x"}, "consumerGroup": "g", "eventType": "info",
                    "traceNames": ["a", "b"], "workerId": "w"}"#,
                r#"{"transactionId": "t", "partitionId": "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
                    "data": null, "traceNames": "a", "consumerGroup": null}"#,
            ], |b: &RawBody| b.json_without_payloads().and_then(|v| parse_record(&trace_body(&v)?).map(drop))),
        route(M::GET, "/api/v1/traces/names", ReadOnly, names_list)
            .doc(op("Trace names")
                .paged(NAMES, "Trace names")
                .answers::<TraceNames>(200, "A page of names."))
            .reads_request(&["?limit=50&offset=0"], |p: Params| async move {
                let _ = p.page(NAMES);
            }),
        route(M::GET, "/api/v1/traces/by-name/{name}", ReadOnly, by_name)
            .doc(op("Traces carrying a name")
                .paged(BY_NAME, "Traces")
                .answers::<NamedTraces>(200, "A page of traces."))
            .reads_request(&["checkout?limit=100"], |_: PathParams<String>, p: Params| async move {
                let _ = p.page(BY_NAME);
            }),
        route(M::GET, "/api/v1/traces/{partition_id}/{transaction_id}", ReadOnly, of_message)
            .doc(op("A message's traces")
                .answers::<MessageTraces>(200, "The traces."))
            .reads_request(
                &["0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d/ord-77-created"],
                |PathParams((pid, _)): PathParams<(String, String)>| async move {
                    let _ = Uuid::parse_str(&pid);
                },
            ),
    ]
}

/// A recorded trace event.
#[derive(Serialize, JsonSchema)]
struct Recorded {
    success: True,
    /// The trace record's id.
    #[serde(rename = "traceId")]
    trace_id: Uuid,
}

/// A trace event's 404, in the shape the clients read (they never raise on it).
#[derive(Serialize, JsonSchema)]
struct TraceNotFound {
    #[schemars(extend("const" = false))]
    success: bool,
    #[schemars(extend("const" = NOT_FOUND))]
    error: &'static str,
}

async fn record(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let v = body.json_without_payloads()?;
    let f = trace_body(&v)?;
    let Some(r) = parse_record(&f)? else {
        return Ok(not_found());
    };
    let empty = Value::Object(Map::new());
    let event = TraceEvent {
        partition_id: r.partition_id,
        transaction_id: r.transaction_id,
        event_type: r.event_type,
        data: r.data.unwrap_or(&empty),
        consumer_group: r.consumer_group,
        worker_id: r.worker_id,
        names: &r.names,
    };
    match s.service.traces().record(&who.tenant, &event).await {
        Ok(id) => Ok(Answer(Recorded {
            success: True,
            trace_id: id,
        })
        .with_status(StatusCode::CREATED)),
        Err(Error::NotFound(_)) => Ok(not_found()),
        Err(e) => Err(e.into()),
    }
}

/// 404 in the shape the clients read (`success: false`); they never raise on it.
fn not_found() -> Response {
    Answer(TraceNotFound {
        success: false,
        error: NOT_FOUND,
    })
    .with_status(StatusCode::NOT_FOUND)
}

/// A trace event as sent; `data` is `None` for JSON `null` (stored as `{}`).
struct Record<'a> {
    partition_id: Uuid,
    transaction_id: &'a str,
    event_type: &'a str,
    data: Option<&'a Value>,
    consumer_group: &'a str,
    worker_id: Option<&'a str>,
    names: Vec<String>,
}

/// `POST /api/v1/traces`: an event on one message.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TraceEventIn")]
struct TraceBody {
    #[schemars(with = "String")]
    transaction_id: Option<Value>,
    /// The partition's UUID; one that is not a UUID names no message (404).
    #[schemars(with = "String")]
    partition_id: Option<Value>,
    /// The event's body, any JSON (`null` is stored as `{}`).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Value", !default)]
    data: Option<Value>,
    #[schemars(with = "Option<String>", extend("default" = QUEUE_MODE))]
    consumer_group: Option<Value>,
    #[schemars(with = "Option<String>", extend("default" = "info"))]
    event_type: Option<Value>,
    /// One name or a list.
    #[schemars(with = "Option<TraceNamesIn>")]
    trace_names: Option<Value>,
    #[schemars(with = "Option<String>")]
    worker_id: Option<Value>,
}

// `traceNames`, as sent.
#[derive(JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
#[allow(dead_code)]
enum TraceNamesIn {
    One(String),
    Many(Vec<String>),
}

/// A field that is there, `null` included (which serde's `Option` reads as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The trace body's fields; a body that is not an object names no message.
fn trace_body(v: &Value) -> Result<TraceBody, ApiError> {
    match v.is_object() {
        true => read::fields(v),
        false => Err(ApiError::bad_request(
            "transactionId and partitionId are required",
        )),
    }
}

/// The trace body, read; `None` when its partition id is not a UUID: it names no message of
/// this broker (a 404, not a 400).
fn parse_record(f: &TraceBody) -> Result<Option<Record<'_>>, ApiError> {
    let txid = read::lenient(f.transaction_id.as_ref());
    let (Some(txid), Some(pid)) = (txid, read::lenient(f.partition_id.as_ref())) else {
        return Err(ApiError::bad_request(
            "transactionId and partitionId are required",
        ));
    };
    let data = match &f.data {
        None => return Err(ApiError::bad_request("data is required")),
        Some(Value::Null) => None,
        Some(d) => Some(d),
    };
    let names = names(f.trace_names.as_ref())?;
    let Ok(partition_id) = Uuid::parse_str(pid) else {
        return Ok(None);
    };
    Ok(Some(Record {
        partition_id,
        transaction_id: txid,
        event_type: read::optional(f.event_type.as_ref(), "eventType")?.unwrap_or("info"),
        data,
        consumer_group: read::optional(f.consumer_group.as_ref(), "consumerGroup")?
            .unwrap_or(QUEUE_MODE),
        worker_id: read::optional(f.worker_id.as_ref(), "workerId")?,
        names,
    }))
}

/// `traceNames`: one string, a list of strings, or nothing.
fn names(v: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let refused = || ApiError::bad_request("traceNames must be a string or an array of strings");
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|n| n.as_str().map(str::to_string).ok_or_else(refused))
            .collect(),
        Some(_) => Err(refused()),
    }
}

/// One trace event, in Queen's snake_case.
#[derive(Serialize, JsonSchema)]
struct Trace {
    id: Uuid,
    event_type: String,
    /// As sent (`null` is stored as `{}`).
    data: Value,
    consumer_group: String,
    worker_id: Option<String>,
    created_at: Millis,
    trace_names: Vec<String>,
}

impl From<service::Trace> for Trace {
    fn from(t: service::Trace) -> Trace {
        Trace {
            id: t.id,
            event_type: t.event_type,
            data: t.data,
            consumer_group: t.consumer_group,
            worker_id: t.worker_id,
            created_at: Millis(t.created_at),
            trace_names: t.names,
        }
    }
}

/// `GET /api/v1/traces/:partition_id/:transaction_id`: the message's traces, oldest first.
#[derive(Serialize, JsonSchema)]
struct MessageTraces {
    traces: Vec<Trace>,
}

async fn of_message(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Answer<MessageTraces>, ApiError> {
    let traces = match Uuid::parse_str(&pid) {
        Ok(pid) => {
            s.service
                .traces()
                .of_message(&who.tenant, pid, &txid)
                .await?
        }
        Err(_) => Vec::new(),
    };
    Ok(Answer(MessageTraces {
        traces: traces.into_iter().map(Trace::from).collect(),
    }))
}

/// A trace of a name, with its message's place and payload.
#[derive(Serialize, JsonSchema)]
struct NamedTrace {
    #[serde(flatten)]
    trace: Trace,
    transaction_id: String,
    partition_id: Uuid,
    queue_name: String,
    partition_name: String,
    /// The message's payload; null once the log no longer holds it.
    #[schemars(with = "Option<Value>")]
    message_payload: Option<Box<RawValue>>,
}

impl From<service::NamedTrace> for NamedTrace {
    fn from(n: service::NamedTrace) -> NamedTrace {
        NamedTrace {
            transaction_id: n.trace.transaction_id.clone(),
            partition_id: n.trace.partition_id,
            trace: Trace::from(n.trace),
            queue_name: n.queue,
            partition_name: n.partition,
            message_payload: n.message.map(|m| m.payload),
        }
    }
}

/// `GET /api/v1/traces/by-name/:name`: a page of the name's traces, newest first.
#[derive(Serialize, JsonSchema)]
struct NamedTraces {
    traces: Vec<NamedTrace>,
    /// Traces carrying the name.
    total: i64,
    pagination: Pagination,
}

async fn by_name(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Answer<NamedTraces>, ApiError> {
    let page = p.page(BY_NAME);
    let (traces, total) = s.service.traces().by_name(&who.tenant, &name, page).await?;
    Ok(Answer(NamedTraces {
        traces: traces.into_iter().map(NamedTrace::from).collect(),
        total,
        pagination: Pagination::from(page),
    }))
}

/// One trace name and how much it labels.
#[derive(Serialize, JsonSchema)]
struct TraceName {
    trace_name: String,
    trace_count: i64,
    message_count: i64,
    last_seen: Millis,
}

/// `GET /api/v1/traces/names`: a page of trace names, most recently seen first.
#[derive(Serialize, JsonSchema)]
struct TraceNames {
    trace_names: Vec<TraceName>,
    /// Trace names of the tenant.
    total: i64,
    pagination: Pagination,
}

async fn names_list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<TraceNames>, ApiError> {
    let page = p.page(NAMES);
    let (names, total) = s.service.traces().names(&who.tenant, page).await?;
    Ok(Answer(TraceNames {
        trace_names: names
            .into_iter()
            .map(|n| TraceName {
                trace_name: n.name,
                trace_count: n.traces,
                message_count: n.messages,
                last_seen: Millis(n.last_seen),
            })
            .collect(),
        total,
        pagination: Pagination::from(page),
    }))
}
