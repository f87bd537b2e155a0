//! `/api/v1/ephemeral/*`: Queen's ephemeral queues (spec §18.3; the Python client's
//! `queen/ephemeral/ephemeral.py` is the wire's description): configure, reset, delete, push,
//! pop, ack, the listing and one queue's depth. Contents survive nothing, configuration is
//! durable (`regent_service::ephemeral`; docs/design/ephemeral.md). Refusals carry a `code`
//! beside the text where the client branches on one: `ephemeral_queue_not_found` (depth's
//! 404, the only verb that has one), `queue_full` (429 with `Retry-After`).

use std::time::Duration;

use axum::extract::State as AxState;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use regent_config::Config;
use regent_rules::ephemeral::{AckStatus, Declared, Options, Outcome, Policy};
use regent_rules::naming::{DEFAULT_PARTITION, QUEUE_MODE};
use regent_service::ephemeral::{
    EphemeralDepth, EphemeralMessage, EphemeralQueue, GroupDepth, PartitionDepth, Pop, Push,
    Refused,
};

use super::answer::Answer;
use super::auth::Principal;
use super::body::RawBody;
use super::error::{ApiError, CodedBody};
use super::openapi::{Doc, Tag};
use super::params::{self, Flag, Params};
use super::path::PathParams;
use super::push::{self, MAX_NAME_BYTES};
use super::read;
use super::routes::{route, Entry, Level::*};
use super::State;

const TAG: Tag = (
    "ephemeral",
    "Queen's ephemeral queues: contents that survive nothing (PostgreSQL UNLOGGED tables), configuration that is durable.",
);

/// The code of depth's 404, byte for byte the client's `EPHEMERAL_QUEUE_NOT_FOUND`.
pub const QUEUE_NOT_FOUND: &str = "ephemeral_queue_not_found";

/// A pop's `batch` at most (Queen's bound).
const MAX_BATCH: i64 = 10_000;
/// How long a push refused by a full queue is told to wait: consumers free room as they ack.
const FULL_RETRY_SECS: u64 = 1;
/// How long a tenant at its queue limit is told to wait: room comes back only when one of
/// its queues is deleted.
const QUEUE_LIMIT_RETRY_SECS: u64 = 60;

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::POST, "/api/v1/ephemeral/configure", ReadWrite, configure)
            .doc(op("Declare an ephemeral queue")
                .body_of::<ConfigureBody>(true, "The queue and its options.")
                .fails(400, "`request body must be a JSON object`, `queue is required`, `queue must be a string`, `queue must be at most 512 bytes`, `queue must not contain NUL`, `options must be an object`, `unknown option <name>; known: …`, `<option> must be an integer`, `policy must be reject or dropOldest`, `windowBuffer must be an object`; `Empty request body`, `Invalid JSON: …`.")
                .answers_with_retry::<super::error::LimitBody>(429, "`quota_exceeded`: the tenant has 1,000 ephemeral queues.")
                .answers::<Configured>(201, "Declared: the options in force."))
            .reads_body(
                &[r#"{"queue": "presence", "options": {"maxBytes": 1048576, "maxLength": 100, "policy": "dropOldest", "ttlSeconds": 60, "leaseSeconds": 5, "retryLimit": 3, "windowBuffer": {"ms": 10, "count": 5}}}"#],
                |b| b.json_fields_first().and_then(|v| parse_configure(&v).and_then(|_| b.no_nul(&v))),
            ),
        route(M::POST, "/api/v1/ephemeral/reset", ReadWrite, reset)
            .doc(op("Reset an ephemeral queue")
                .body_of::<ResetBody>(true, "The queue.")
                .fails(400, "`request body must be a JSON object`, `queue is required`, `queue must be a string`, `queue must be at most 512 bytes`, `queue must not contain NUL`; `Empty request body`, `Invalid JSON: …`.")
                .answers::<ResetAnswer>(200, "Reset."))
            .reads_body(&[r#"{"queue": "presence"}"#], |b| {
                b.json_fields_first().and_then(|v| queue_of(&v).and_then(|_| b.no_nul(&v)))
            }),
        route(M::DELETE, "/api/v1/ephemeral/queue/{queue}", Admin, delete)
            .doc(op("Delete an ephemeral queue")
                .fails(400, "`queue must be at most 512 bytes`, `queue must not contain NUL`.")
                .answers::<DeleteAnswer>(200, "Deleted, or not there."))
            .reads_request(&["presence"], |PathParams(q): PathParams<String>| async move {
                let _ = push::name("queue", &q);
            }),
        route(M::POST, "/api/v1/ephemeral/push", ReadWrite, push_messages)
            .doc(op("Push to an ephemeral queue")
                .body_of::<PushFields>(true, "One queue's messages.")
                .fails(400, "`request body must be a JSON object`, `queue is required`, `queue must be a string`, `partition must be a string`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`, `messages must be an array`, `messages[<i>] must be an object with a payload`; `Empty request body`, `Invalid JSON: …`.")
                .fails(413, "`a push of <n> messages is over the queue's maxLength of <max>`, `a push of <n> bytes is over the queue's maxBytes of <max>`; `A request of <n> items is over the limit of <max> items (MAX_PUSH_ITEMS)`.")
                .answers_with_retry::<super::error::LimitBody>(429, "`queue_full`: over the queue's bounds with policy `reject`, nothing written; `quota_exceeded`: the tenant has 1,000 ephemeral queues.")
                .answers::<PushAnswer>(201, "Pushed."))
            .reads_body(
                &[r#"{"queue": "presence", "partition": "room-7", "messages": [{"payload": {"user": "a", "typing": true}}, {"payload": 3}]}"#],
                |b| parse_push(b, FUZZ_MAX_ITEMS).map(drop),
            ),
        route(M::GET, "/api/v1/ephemeral/pop", ReadWrite, pop)
            .doc(op("Pop from an ephemeral queue").query_of::<PopQuery>()
                .fails(400, "`queue is required`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`; an undecodable query string.")
                .answers_with_retry::<super::error::LimitBody>(429, "`quota_exceeded`: the tenant has 1,000 ephemeral queues and this one is not one of them.")
                .answers::<PopAnswer>(200, "The messages."))
            .reads_request(&["?queue=inbox&partition=p&batch=10&wait=true&timeout=30000&group=workers&autoAck=true"],
                |p: Params| async move { let _ = ask(&DEFAULTS, &p); }),
        route(M::POST, "/api/v1/ephemeral/ack", ReadWrite, ack)
            .doc(op("Ack ephemeral messages")
                .body_of::<AckFields>(true, "The acks.")
                .fails(400, "`request body must be a JSON object`, `queue is required`, `queue must be a string`, `group must be a string`, `<field> must be at most 512 bytes`, `<field> must not contain NUL`, `acks must be an array`, `acks[<i>].id is required`, `acks[<i>].status must be a string`; `Empty request body`, `Invalid JSON: …`.")
                .fails(413, "`A request of <n> items is over the limit of <max> items (MAX_PUSH_ITEMS)`.")
                .answers::<AckAnswer>(200, "Each ack's outcome, in order."))
            .reads_body(
                &[r#"{"queue": "inbox", "group": "workers", "acks": [{"id": "e:1f:Default:0", "status": "completed"}, {"id": "e:1f:Default:1", "status": "retry", "error": "busy"}]}"#],
                |b| b.json_fields_first().and_then(|v| parse_ack(&v, FUZZ_MAX_ITEMS).and_then(|_| b.no_nul(&v))),
            ),
        route(M::GET, "/api/v1/ephemeral/queues", ReadOnly, queues)
            .doc(op("Ephemeral queues")
                .answers::<QueuesAnswer>(200, "The queues."))
            .reads_nothing(),
        route(M::GET, "/api/v1/ephemeral/queues/{queue}/depth", ReadOnly, depth)
            .doc(op("An ephemeral queue's depth")
                .fails(400, "`queue must be at most 512 bytes`, `queue must not contain NUL`.")
                .answers::<CodedBody>(404, "`ephemeral_queue_not_found`: the tenant has no such queue, declared or live.")
                .answers::<DepthAnswer>(200, "The depth."))
            .reads_request(&["presence"], |PathParams(q): PathParams<String>| async move {
                let _ = push::name("queue", &q);
            }),
    ]
}

/// The pop defaults and clamps of a broker with an empty environment: what the document
/// says and what the fuzzer reads with.
static DEFAULTS: std::sync::LazyLock<Config> = std::sync::LazyLock::new(Config::defaults);

/// The fuzzer's bound on a request's items (the default `MAX_PUSH_ITEMS`).
const FUZZ_MAX_ITEMS: usize = 10_000;

/// An ephemeral pop's query string, as [`ask`] reads it, with the defaults and clamps of
/// [`DEFAULTS`].
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PopQuery<'a> {
    /// The queue (required).
    #[serde(borrow)]
    queue: Option<&'a str>,
    /// One partition; absent: any.
    #[serde(borrow)]
    partition: Option<&'a str>,
    /// Most messages in the answer.
    #[serde(default, deserialize_with = "params::int")]
    #[schemars(with = "i64", range(min = 1, max = MAX_BATCH), extend("default" = 1))]
    batch: Option<i64>,
    /// `true` or `1`: long-poll until messages arrive or `timeout` passes.
    #[serde(default, deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "false"))]
    wait: bool,
    /// The long-poll deadline in ms (`DEFAULT_TIMEOUT`), clamped to `MAX_TIMEOUT`.
    #[serde(default, deserialize_with = "params::int")]
    #[schemars(
        with = "i64",
        range(min = 0),
        extend("default" = DEFAULTS.default_timeout, "x-clamped-to" = DEFAULTS.max_timeout)
    )]
    timeout: Option<i64>,
    /// The consumer group; absent or empty: queue mode.
    #[serde(borrow)]
    #[schemars(extend("default" = QUEUE_MODE))]
    group: Option<&'a str>,
    /// Done at delivery: no lease, nothing to ack (at most once).
    #[serde(default, deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "false"))]
    auto_ack: bool,
}

// ---------------------------------------------------------------- reading

/// A required name: absent, null or empty is `<field> is required`.
fn required(v: Option<&Value>, field: &str) -> Result<String, ApiError> {
    push::name(field, read::required(v, field)?)
}

/// An optional name: absent, null or empty is `None`.
fn optional(v: Option<&Value>, field: &str) -> Result<Option<String>, ApiError> {
    read::optional(v, field)?
        .map(|s| push::name(field, s))
        .transpose()
}

/// `POST /api/v1/ephemeral/configure`: the queue and its options.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralConfigure")]
struct ConfigureBody {
    /// The queue.
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<Value>,
    /// Every option may be left out (its default then); an option not named here is refused.
    #[schemars(with = "Option<OptionsBody>")]
    options: Option<Value>,
}

/// An ephemeral queue's options as a declaration sends them; a value past its bound is
/// clamped, as in Queen.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EphemeralOptionsIn")]
struct OptionsBody {
    /// Bytes the queue holds at most (default 16 MiB, at most 64 MiB).
    #[schemars(with = "Option<i64>")]
    max_bytes: Option<Value>,
    /// Messages the queue holds at most (default 10,000, at most 100,000).
    #[schemars(with = "Option<i64>")]
    max_length: Option<Value>,
    /// What a push over the bounds does: `reject` (429 `queue_full`, the default) or
    /// `dropOldest`.
    #[schemars(with = "Option<String>", extend("enum" = ["reject", "dropOldest", null]))]
    policy: Option<Value>,
    /// Older messages are never delivered (default 0: no limit).
    #[schemars(with = "Option<i64>")]
    ttl_seconds: Option<Value>,
    /// An unacked delivery comes back after it (default 30).
    #[schemars(with = "Option<i64>")]
    lease_seconds: Option<Value>,
    /// Deliveries at most (default 5), then the message is dropped for the group.
    #[schemars(with = "Option<i64>")]
    retry_limit: Option<Value>,
    /// Stored and echoed.
    #[schemars(with = "Option<WindowBody>")]
    window_buffer: Option<Value>,
}

/// `windowBuffer`.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralWindowIn")]
struct WindowBody {
    #[schemars(with = "Option<i64>")]
    ms: Option<Value>,
    #[schemars(with = "Option<i64>")]
    count: Option<Value>,
}

/// `POST /api/v1/ephemeral/reset`.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralReset")]
struct ResetBody {
    /// The queue.
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<Value>,
}

fn queue_of(v: &Value) -> Result<String, ApiError> {
    required(read::fields::<ResetBody>(v)?.queue.as_ref(), "queue")
}

fn parse_configure(v: &Value) -> Result<(String, Declared), ApiError> {
    let b: ConfigureBody = read::fields(v)?;
    let queue = required(b.queue.as_ref(), "queue")?;
    let o = match &b.options {
        None => OptionsBody::default(),
        Some(Value::Object(m)) => {
            let known = read::names::<OptionsBody>();
            if let Some(k) = m.keys().find(|k| !known.contains(&k.as_str())) {
                return Err(ApiError::bad_request(format!(
                    "unknown option {k}; known: {}",
                    known.join(", ")
                )));
            }
            read::fields(b.options.as_ref().unwrap_or(&Value::Null))?
        }
        Some(_) => return Err(ApiError::bad_request("options must be an object")),
    };
    let policy = o
        .policy
        .as_ref()
        .map(|p| {
            p.as_str()
                .and_then(Policy::parse)
                .ok_or_else(|| ApiError::bad_request("policy must be reject or dropOldest"))
        })
        .transpose()?;
    let (window_ms, window_count) = match &o.window_buffer {
        None => (None, None),
        Some(w @ Value::Object(_)) => {
            let w: WindowBody = read::fields(w)?;
            (
                read::whole(w.ms.as_ref(), "windowBuffer.ms")?,
                read::whole(w.count.as_ref(), "windowBuffer.count")?,
            )
        }
        Some(_) => return Err(ApiError::bad_request("windowBuffer must be an object")),
    };
    Ok((
        queue,
        Declared {
            max_bytes: read::whole(o.max_bytes.as_ref(), "maxBytes")?,
            max_length: read::whole(o.max_length.as_ref(), "maxLength")?,
            policy,
            ttl_seconds: read::whole(o.ttl_seconds.as_ref(), "ttlSeconds")?,
            lease_seconds: read::whole(o.lease_seconds.as_ref(), "leaseSeconds")?,
            retry_limit: read::whole(o.retry_limit.as_ref(), "retryLimit")?,
            window_ms,
            window_count,
        },
    ))
}

/// A push body: the queue, the partition and each message's payload as sent.
struct PushBody<'a> {
    queue: String,
    partition: Option<String>,
    payloads: Vec<&'a RawValue>,
}

/// `POST /api/v1/ephemeral/push`: the small fields as values, the messages as sent.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralPush")]
struct PushFields<'a> {
    /// The queue; created with its defaults when unknown.
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<Value>,
    #[schemars(with = "Option<String>", length(max = MAX_NAME_BYTES))]
    #[schemars(extend("default" = DEFAULT_PARTITION))]
    partition: Option<Value>,
    #[serde(borrow)]
    #[schemars(with = "Vec<MessageBody>")]
    messages: Option<&'a RawValue>,
}

/// One message of an ephemeral push.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralMessageIn")]
struct MessageBody<'a> {
    /// Any JSON, kept as sent.
    #[serde(borrow)]
    #[schemars(with = "Value")]
    payload: Option<&'a RawValue>,
}

fn parse_push(body: &RawBody, max: usize) -> Result<PushBody<'_>, ApiError> {
    let raw = body.raw_json()?;
    let f: PushFields<'_> =
        serde_json::from_str(raw.get()).map_err(|_| ApiError::bad_request(read::NOT_AN_OBJECT))?;
    let queue = required(f.queue.as_ref(), "queue")?;
    let partition = optional(f.partition.as_ref(), "partition")?;
    let messages: Vec<&RawValue> = match f.messages {
        None => return Err(ApiError::bad_request("messages must be an array")),
        Some(m) => serde_json::from_str(m.get())
            .map_err(|_| ApiError::bad_request("messages must be an array"))?,
    };
    if messages.len() > max {
        return Err(ApiError::TooManyItems {
            items: messages.len(),
            max,
        });
    }
    let payloads = messages
        .iter()
        .enumerate()
        .map(|(i, m)| payload(i, m))
        .collect::<Result<_, _>>()?;
    Ok(PushBody {
        queue,
        partition,
        payloads,
    })
}

/// One message's payload, as sent.
fn payload(i: usize, m: &RawValue) -> Result<&RawValue, ApiError> {
    serde_json::from_str::<MessageBody<'_>>(m.get())
        .ok()
        .and_then(|m| m.payload)
        .ok_or_else(|| {
            ApiError::bad_request(format!("messages[{i}] must be an object with a payload"))
        })
}

/// An ack body: the queue, the group and each (id, status).
type AckBody = (String, Option<String>, Vec<(String, AckStatus)>);

/// `POST /api/v1/ephemeral/ack`.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralAck")]
struct AckFields {
    #[schemars(with = "String", length(max = MAX_NAME_BYTES))]
    queue: Option<Value>,
    /// The pop's group; absent: queue mode.
    #[schemars(with = "Option<String>", extend("default" = QUEUE_MODE))]
    group: Option<Value>,
    #[schemars(with = "Vec<AckItemBody>")]
    acks: Option<Value>,
}

/// One ack: which delivery, and its outcome.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "EphemeralAckItem")]
struct AckItemBody {
    /// The popped message's `id`.
    #[schemars(with = "String")]
    id: Option<Value>,
    /// Absent, `completed`, `success`, `acked`, `ok` complete; `retry` retries; anything
    /// else fails.
    #[schemars(with = "Option<String>", extend("default" = "completed"))]
    status: Option<Value>,
    /// Accepted and not kept (there is no DLQ).
    #[schemars(with = "Option<Value>")]
    #[allow(dead_code)]
    error: Option<Value>,
}

fn parse_ack(v: &Value, max: usize) -> Result<AckBody, ApiError> {
    let o: AckFields = read::fields(v)?;
    let queue = required(o.queue.as_ref(), "queue")?;
    let group = optional(o.group.as_ref(), "group")?;
    // Absent is not an array either: the client always sends one.
    let acks = read::array(o.acks.as_ref(), "acks")?
        .ok_or_else(|| ApiError::bad_request("acks must be an array"))?;
    if acks.len() > max {
        return Err(ApiError::TooManyItems {
            items: acks.len(),
            max,
        });
    }
    let acks = acks
        .iter()
        .enumerate()
        .map(|(i, a)| {
            // An ack that is not an object names no delivery.
            let item = match a.is_object() {
                true => Some(read::fields::<AckItemBody>(a)?),
                false => None,
            };
            let id = match item.as_ref().and_then(|a| a.id.as_ref()) {
                Some(Value::String(id)) if !id.is_empty() => id.clone(),
                _ => return Err(ApiError::bad_request(format!("acks[{i}].id is required"))),
            };
            let status = item.as_ref().and_then(|a| a.status.as_ref());
            let status = read::text(status, &format!("acks[{i}].status"))?;
            Ok((id, AckStatus::parse(status)))
        })
        .collect::<Result<_, _>>()?;
    Ok((queue, group, acks))
}

/// A pop's query with Queen's defaults and clamps.
fn ask(c: &Config, p: &Params) -> Result<Pop, ApiError> {
    let q: PopQuery = p.read()?;
    let queue = q
        .queue
        .ok_or_else(|| ApiError::bad_request("queue is required"))?;
    let name = |field, v: Option<&str>| v.map(|v| push::name(field, v)).transpose();
    let timeout = q
        .timeout
        .map(|t| t.max(0) as u64)
        .unwrap_or(c.default_timeout)
        .min(c.max_timeout);
    Ok(Pop {
        queue: push::name("queue", queue)?,
        partition: name("partition", q.partition)?,
        group: name("group", q.group)?,
        batch: q.batch.unwrap_or(1).clamp(1, MAX_BATCH),
        wait: q.wait,
        timeout: Duration::from_millis(timeout),
        auto_ack: q.auto_ack,
    })
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        match r {
            Refused::QueueFull => ApiError::TooManyRequests {
                text: "the ephemeral queue is at its maxBytes/maxLength and its policy is reject"
                    .into(),
                code: "queue_full",
                retry_after_secs: FULL_RETRY_SECS,
            },
            Refused::TooLarge(why) => ApiError::TooLarge(why),
            Refused::QueueLimit => ApiError::TooManyRequests {
                text: format!(
                    "Ephemeral queue limit reached: {} queues",
                    regent_rules::ephemeral::MAX_QUEUES_PER_TENANT
                ),
                code: "quota_exceeded",
                retry_after_secs: QUEUE_LIMIT_RETRY_SECS,
            },
        }
    }
}

// ---------------------------------------------------------------- answers

/// A queue's options in force.
#[derive(Serialize, JsonSchema)]
struct OptionsView {
    #[serde(rename = "maxBytes")]
    max_bytes: i64,
    #[serde(rename = "maxLength")]
    max_length: i64,
    #[schemars(extend("enum" = ["reject", "dropOldest"]))]
    policy: &'static str,
    /// 0: no age limit.
    #[serde(rename = "ttlSeconds")]
    ttl_seconds: i64,
    #[serde(rename = "leaseSeconds")]
    lease_seconds: i64,
    #[serde(rename = "retryLimit")]
    retry_limit: i64,
    #[serde(rename = "windowBuffer")]
    window_buffer: WindowView,
}

#[derive(Serialize, JsonSchema)]
struct WindowView {
    ms: i64,
    count: i64,
}

impl From<Options> for OptionsView {
    fn from(o: Options) -> OptionsView {
        OptionsView {
            max_bytes: o.max_bytes,
            max_length: o.max_length,
            policy: o.policy.as_str(),
            ttl_seconds: o.ttl_seconds,
            lease_seconds: o.lease_seconds,
            retry_limit: o.retry_limit,
            window_buffer: WindowView {
                ms: o.window_ms,
                count: o.window_count,
            },
        }
    }
}

/// A declaration's answer.
#[derive(Serialize, JsonSchema)]
struct Configured {
    queue: String,
    /// `declared`.
    tier: &'static str,
    options: OptionsView,
}

async fn configure(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let v = body.json_fields_first()?;
    let (queue, declared) = parse_configure(&v)?;
    body.no_nul(&v)?;
    let options = s
        .service
        .ephemeral()
        .configure(&who.tenant, &queue, &declared)
        .await??;
    Ok(Answer(Configured {
        queue,
        tier: "declared",
        options: options.into(),
    })
    .with_status(StatusCode::CREATED))
}

#[derive(Serialize, JsonSchema)]
struct ResetAnswer {
    queue: String,
    /// Messages dropped.
    dropped: i64,
}

async fn reset(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<ResetAnswer>, ApiError> {
    let v = body.json_fields_first()?;
    let queue = queue_of(&v)?;
    body.no_nul(&v)?;
    let dropped = s.service.ephemeral().reset(&who.tenant, &queue).await?;
    Ok(Answer(ResetAnswer { queue, dropped }))
}

#[derive(Serialize, JsonSchema)]
struct DeleteAnswer {
    queue: String,
    deleted: bool,
}

async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
) -> Result<Answer<DeleteAnswer>, ApiError> {
    let queue = push::name("queue", &queue)?;
    let deleted = s.service.ephemeral().delete(&who.tenant, &queue).await?;
    Ok(Answer(DeleteAnswer { queue, deleted }))
}

#[derive(Serialize, JsonSchema)]
struct PushAnswer {
    pushed: usize,
}

async fn push_messages(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let b = parse_push(&body, s.config.max_push_items)?;
    let p = Push {
        queue: &b.queue,
        partition: b.partition.as_deref(),
        payloads: b.payloads.iter().map(|m| m.get()).collect(),
    };
    let pushed = s.service.ephemeral().push(&who.tenant, &p).await??;
    Ok(Answer(PushAnswer { pushed }).with_status(StatusCode::CREATED))
}

/// One popped message.
#[derive(Serialize, JsonSchema)]
struct MessageView {
    /// Opaque; names the queue's incarnation. Ack with it.
    id: String,
    partition: String,
    /// As pushed.
    #[schemars(with = "Value")]
    payload: Box<RawValue>,
    /// Deliveries to the group, this one included.
    attempts: i32,
}

impl TryFrom<EphemeralMessage> for MessageView {
    type Error = ApiError;
    fn try_from(m: EphemeralMessage) -> Result<MessageView, ApiError> {
        let payload = RawValue::from_string(m.payload).map_err(|e| {
            ApiError::Internal(format!("a stored ephemeral payload is not JSON: {e}"))
        })?;
        Ok(MessageView {
            id: m.id,
            partition: m.partition,
            payload,
            attempts: m.attempts,
        })
    }
}

#[derive(Serialize, JsonSchema)]
struct PopAnswer {
    queue: String,
    /// Empty when there was nothing.
    messages: Vec<MessageView>,
}

async fn pop(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<PopAnswer>, ApiError> {
    let req = ask(&s.config, &p)?;
    let messages = s.service.ephemeral().pop(&who.tenant, &req).await??;
    Ok(Answer(PopAnswer {
        queue: req.queue,
        messages: messages
            .into_iter()
            .map(MessageView::try_from)
            .collect::<Result<_, _>>()?,
    }))
}

#[derive(Serialize, JsonSchema)]
struct AckResult {
    id: String,
    #[schemars(extend("enum" = ["acked", "redelivered", "stale", "unknown"]))]
    outcome: &'static str,
}

#[derive(Serialize, JsonSchema)]
struct AckAnswer {
    results: Vec<AckResult>,
}

async fn ack(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<AckAnswer>, ApiError> {
    let v = body.json_fields_first()?;
    let (queue, group, acks) = parse_ack(&v, s.config.max_push_items)?;
    body.no_nul(&v)?;
    let sent: Vec<(&str, AckStatus)> = acks.iter().map(|(id, st)| (id.as_str(), *st)).collect();
    let outcomes = s
        .service
        .ephemeral()
        .ack(&who.tenant, &queue, group.as_deref(), &sent)
        .await?;
    Ok(Answer(AckAnswer {
        results: acks
            .into_iter()
            .zip(outcomes)
            .map(|((id, _), o): ((String, AckStatus), Outcome)| AckResult {
                id,
                outcome: o.as_str(),
            })
            .collect(),
    }))
}

/// What a queue dropped, by reason.
#[derive(Serialize, JsonSchema)]
struct Drops {
    /// To make room under `maxLength`/`maxBytes` (`dropOldest`).
    bounds: i64,
    /// Past `ttlSeconds`.
    ttl: i64,
    /// Deliveries given up past `retryLimit`.
    retry: i64,
}

/// One queue of the listing.
#[derive(Serialize, JsonSchema)]
struct QueueView {
    queue: String,
    /// `declared` (configured: comes back after a crash, empty) or `implicit` (created by a
    /// push or a pop).
    #[schemars(extend("enum" = ["declared", "implicit"]))]
    tier: &'static str,
    /// Messages held.
    depth: i64,
    bytes: i64,
    partitions: i64,
    groups: i64,
    drops: Drops,
    options: OptionsView,
}

fn tier(declared: bool) -> &'static str {
    if declared {
        "declared"
    } else {
        "implicit"
    }
}

impl From<EphemeralQueue> for QueueView {
    fn from(q: EphemeralQueue) -> QueueView {
        QueueView {
            tier: tier(q.declared),
            queue: q.name,
            depth: q.messages,
            bytes: q.bytes,
            partitions: q.partitions,
            groups: q.groups,
            drops: Drops {
                bounds: q.dropped_bounds,
                ttl: q.dropped_ttl,
                retry: q.dropped_retry,
            },
            options: q.options.into(),
        }
    }
}

#[derive(Serialize, JsonSchema)]
struct QueuesAnswer {
    queues: Vec<QueueView>,
    count: usize,
}

async fn queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<QueuesAnswer>, ApiError> {
    let queues: Vec<QueueView> = s
        .service
        .ephemeral()
        .queues(&who.tenant)
        .await?
        .into_iter()
        .map(QueueView::from)
        .collect();
    Ok(Answer(QueuesAnswer {
        count: queues.len(),
        queues,
    }))
}

/// One partition's messages.
#[derive(Serialize, JsonSchema)]
struct PartitionView {
    partition: String,
    /// Messages held.
    pending: i64,
    bytes: i64,
}

/// One group's backlog.
#[derive(Serialize, JsonSchema)]
struct GroupView {
    group: String,
    /// Not yet handed to the group, plus deliveries due again.
    pending: i64,
    /// Deliveries under a live lease.
    leased: i64,
}

#[derive(Serialize, JsonSchema)]
struct DepthAnswer {
    queue: String,
    #[schemars(extend("enum" = ["declared", "implicit"]))]
    tier: &'static str,
    /// The worst named group's backlog, else queue mode's, else every message held.
    pending: i64,
    /// Messages held (the ring's length).
    depth: i64,
    bytes: i64,
    #[serde(rename = "partitionsPending")]
    partitions_pending: usize,
    partitions: Vec<PartitionView>,
    groups: Vec<GroupView>,
}

impl From<EphemeralDepth> for DepthAnswer {
    fn from(d: EphemeralDepth) -> DepthAnswer {
        let partitions: Vec<PartitionView> = d.partitions.into_iter().map(partition).collect();
        DepthAnswer {
            tier: tier(d.queue.declared),
            queue: d.queue.name,
            pending: d.pending,
            depth: d.queue.messages,
            bytes: d.queue.bytes,
            partitions_pending: partitions.iter().filter(|p| p.pending > 0).count(),
            partitions,
            groups: d.groups.into_iter().map(group).collect(),
        }
    }
}

fn partition(p: PartitionDepth) -> PartitionView {
    PartitionView {
        partition: p.partition,
        pending: p.messages,
        bytes: p.bytes,
    }
}

fn group(g: GroupDepth) -> GroupView {
    GroupView {
        group: g.group,
        pending: g.fresh + g.due,
        leased: g.leased,
    }
}

async fn depth(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
) -> Result<Response, ApiError> {
    let queue = push::name("queue", &queue)?;
    match s.service.ephemeral().depth(&who.tenant, &queue).await? {
        Some(d) => Ok(Answer(DepthAnswer::from(d)).into_response()),
        None => Err(ApiError::Coded {
            status: StatusCode::NOT_FOUND,
            code: QUEUE_NOT_FOUND,
            text: format!("no ephemeral queue named {queue}"),
        }),
    }
}
