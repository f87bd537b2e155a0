//! The three pop routes: claim partitions for a consumer group under one lease, long-polling
//! when asked to.

use std::time::Duration;

use axum::extract::State as AxState;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use uuid::Uuid;

use regent_config::Config;
use regent_rules::naming::QUEUE_MODE;
use regent_rules::subscription::start_point;
use regent_service::pop::{Delivery, PopRequest, Popped, Target};

use super::ack;
use super::answer::{Answer, Micros, True};
use super::auth::Principal;
use super::error::ApiError;
use super::handover::respond;
use super::openapi::Doc;
use super::params::{self, Flag, Params};
use super::path::PathParams;
use super::routes::{route, Entry, Level::ReadWrite};
use super::{AppState, State};

const SUBSCRIPTION_FROM_400: &str = "`subscriptionFrom` unparsable; `batch must be a \
    non-negative integer, got '<v>'`; an undecodable query string or path segment.";

pub(crate) fn routes() -> Vec<Entry> {
    let doc = |summary, partitions: bool| pop_params(Doc::op(ack::TAG, summary), partitions);
    vec![
        route(Method::GET, "/api/v1/pop/queue/{queue}", ReadWrite, pop_queue)
            .doc(doc("Pop from any partition of a queue", true)
                .fails(400, SUBSCRIPTION_FROM_400))
            .reads_request(&[
                "orders?batch=10&wait=true&timeout=30000&consumerGroup=g&subscriptionMode=new&autoAck=true",
                "orders?subscriptionFrom=2026-01-02T03:04:05Z&autopilot=1&partitions=5",
            ], |PathParams(q): PathParams<String>, p: Params| async move {
                ask(&DEFAULTS, &p, Target::Queue(q)).map(drop)
            }),
        route(Method::GET, "/api/v1/pop/queue/{queue}/partition/{partition}", ReadWrite, pop_partition)
            .doc(doc("Pop from one named partition", false)
                .fails(400, SUBSCRIPTION_FROM_400))
            .reads_request(&["orders/customer-42?batch=1&wait=false&timeout=-5&consumerGroup=g"],
                |PathParams((q, part)): PathParams<(String, String)>, p: Params| async move {
                    ask(&DEFAULTS, &p, Target::Partition(q, part)).map(drop)
                }),
        route(Method::GET, "/api/v1/pop", ReadWrite, pop_scope)
            .doc(doc("Pop across a namespace or task", true)
                .query_of::<ScopeQuery>()
                .fails(400, "`namespace or task is required`; `subscriptionFrom` unparsable; `batch must be a non-negative integer, got '<v>'`."))
            .reads_request(&["?namespace=billing&task=invoice&batch=100&subscriptionMode=all"], |p: Params| async move {
                scope(&p).and_then(|t| ask(&DEFAULTS, &p, t)).map(drop)
            }),
    ]
}

/// The pop defaults and clamps of a broker with an empty environment: what the operations
/// document and what the fuzzer reads with.
static DEFAULTS: std::sync::LazyLock<Config> = std::sync::LazyLock::new(Config::defaults);

/// The query parameters every pop reads ([`ask`]), with the defaults and clamps of
/// [`DEFAULTS`], and its answer; `partitions` where the route claims more than one.
fn pop_params(d: Doc, partitions: bool) -> Doc {
    let d = d.query_of::<PopQuery>();
    let d = if partitions {
        d.query_of::<PartitionsQuery>()
    } else {
        d
    };
    d.answers::<PopAnswer>(200, "Messages, or an empty shape.")
}

/// A pop's query string, as [`ask`] reads it.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PopQuery<'a> {
    #[serde(default, deserialize_with = "params::count")]
    #[schemars(
        with = "i64",
        range(min = 1, max = DEFAULTS.max_batch_size),
        extend("default" = DEFAULTS.default_batch_size),
        description = format!("Most messages in the answer, over every claimed partition. Absent: `DEFAULT_BATCH_SIZE` ({}), or `AUTOPILOT_BATCH_SIZE` ({}) with `autopilot=true`; larger values are clamped to `MAX_BATCH_SIZE` ({}).", DEFAULTS.default_batch_size, DEFAULTS.autopilot_batch_size, DEFAULTS.max_batch_size),
    )]
    batch: Option<i64>,
    /// `true` or `1`: long-poll until messages arrive or `timeout` passes.
    #[serde(default, deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "false"))]
    wait: bool,
    /// The long-poll deadline in ms (`DEFAULT_TIMEOUT`), clamped to `MAX_TIMEOUT`; the Python
    /// client gives up at `timeout` + 5 s.
    #[serde(default, deserialize_with = "params::int")]
    #[schemars(
        with = "i64",
        range(min = 0),
        extend("default" = DEFAULTS.default_timeout, "x-clamped-to" = DEFAULTS.max_timeout)
    )]
    timeout: Option<i64>,
    /// The group whose cursor is read; absent or empty: queue mode.
    #[serde(borrow)]
    #[schemars(extend("default" = QUEUE_MODE))]
    consumer_group: Option<&'a str>,
    /// Commit at delivery: no lease, `leaseId` is `""`, nothing to ack (at-most-once).
    #[serde(default, deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "false"))]
    auto_ack: bool,
    /// A named group's first-join start: `new`, `new-only` or `now` start at the end; anything
    /// else (`all`, `from_beginning`) from the first message, as in Queen 0.15. Absent:
    /// `DEFAULT_SUBSCRIPTION_MODE`.
    #[serde(borrow)]
    subscription_mode: Option<&'a str>,
    /// A named group's first-join start instant (ISO-8601, or `now`); wins over
    /// `subscriptionMode`. Unparsable: 400 (Queen 0.15 silently starts from the beginning).
    #[serde(borrow)]
    #[schemars(example = &"2026-04-26T10:00:00Z", example = &"now")]
    subscription_from: Option<&'a str>,
    /// 1.2+ clients: the broker picks the `batch` and `partitions` left out, and echoes them
    /// under `autopilot`.
    #[serde(default, deserialize_with = "params::flag")]
    #[schemars(with = "Flag", extend("default" = "false"))]
    autopilot: bool,
}

/// `partitions`, where a pop may claim several.
#[derive(Deserialize, JsonSchema)]
struct PartitionsQuery {
    /// Most partitions claimed under the lease.
    #[serde(default, deserialize_with = "params::int")]
    #[schemars(with = "i64", range(min = 1, max = MAX_PARTITIONS), extend("default" = 1))]
    partitions: Option<i64>,
}

/// `GET /api/v1/pop`'s target, as [`scope`] reads it.
#[derive(Deserialize, JsonSchema)]
struct ScopeQuery {
    /// The queues' namespace (this or `task` is required).
    #[schemars(with = "String")]
    namespace: Option<String>,
    /// The queues' task.
    #[schemars(with = "String")]
    task: Option<String>,
}

/// The most partitions one pop claims.
const MAX_PARTITIONS: i64 = 1000;

async fn pop_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, Target::Queue(queue), &params).await
}

async fn pop_partition(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((queue, partition)): PathParams<(String, String)>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, Target::Partition(queue, partition), &params).await
}

/// `GET /api/v1/pop?namespace=…&task=…`: documented by Queen and called by its client when
/// a consumer names no queue.
async fn pop_scope(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    params: Params,
) -> Result<Response, ApiError> {
    run(&s, &who, scope(&params)?, &params).await
}

/// `GET /api/v1/pop`'s target: a namespace, a task, or both.
pub(crate) fn scope(params: &Params) -> Result<Target, ApiError> {
    let ScopeQuery { namespace, task } = params.read()?;
    if namespace.is_none() && task.is_none() {
        return Err(ApiError::bad_request("namespace or task is required"));
    }
    Ok(Target::Scope { namespace, task })
}

/// The knobs only the answer needs.
pub(crate) struct Echo {
    autopilot: bool,
    batch: i64,
    partitions: i64,
}

async fn run(
    s: &AppState,
    who: &Principal,
    target: Target,
    p: &Params,
) -> Result<Response, ApiError> {
    let (req, echo) = ask(&s.config, p, target)?;
    let popped = s.service.pop(&who.tenant, &req).await?;
    Ok(answer(popped, &req, &echo))
}

/// The request's knobs with Queen's defaults and clamps.
pub(crate) fn ask(c: &Config, p: &Params, target: Target) -> Result<(PopRequest, Echo), ApiError> {
    let q: PopQuery = p.read()?;
    let default_batch = if q.autopilot {
        c.autopilot_batch_size
    } else {
        c.default_batch_size
    };
    let batch = q.batch.unwrap_or(default_batch).clamp(1, c.max_batch_size);
    let partitions = match target {
        Target::Partition(..) => 1,
        _ => p
            .read::<PartitionsQuery>()?
            .partitions
            .unwrap_or(1)
            .clamp(1, MAX_PARTITIONS),
    };
    let timeout_ms = q
        .timeout
        .map(|t| t.max(0) as u64)
        .unwrap_or(c.default_timeout)
        .min(c.max_timeout);
    let mode = q
        .subscription_mode
        .or(Some(c.default_subscription_mode.as_str()));
    let start = start_point(mode, q.subscription_from, chrono::Utc::now())
        .map_err(|e| ApiError::bad_request(e.0))?;
    let req = PopRequest {
        target,
        batch,
        partitions,
        wait: q.wait,
        timeout: Duration::from_millis(timeout_ms),
        group: q.consumer_group.unwrap_or(QUEUE_MODE).to_string(),
        auto_ack: q.auto_ack,
        start,
    };
    let echo = Echo {
        autopilot: q.autopilot,
        batch,
        partitions,
    };
    Ok((req, echo))
}

/// What a pop answers: messages under one lease, or one of the empty shapes Queen answers
/// (always 200 with a body: Queen 0.15 sends 204 for some, which the Python client reads the
/// same way). Describes the answer; each shape is rendered on its own.
#[derive(JsonSchema)]
#[schemars(untagged)]
#[allow(dead_code)]
enum PopAnswer {
    /// Messages were claimed.
    Delivered(MessagesOut<'static>),
    /// Nothing to deliver: the long-poll deadline passed, the claimed partition had nothing
    /// readable yet, or pops are paused.
    Empty(EmptyOut),
    /// Nothing claimable now (no wait).
    Nothing(NothingOut),
}

/// Nothing to deliver, from a claim or a long-poll.
#[derive(Serialize, JsonSchema)]
struct EmptyOut {
    success: True,
    /// The queue asked for (`""` on the namespace/task route).
    queue: String,
    /// The partition asked for, or `""`.
    partition: String,
    /// The claimed partition when one was claimed but nothing was readable (delayed, window
    /// buffer); else null.
    #[serde(rename = "partitionId")]
    partition_id: Option<Uuid>,
    /// `""` when a partition was claimed and released; null at a long-poll deadline or when
    /// paused.
    #[serde(rename = "leaseId")]
    lease_id: Option<&'static str>,
    #[serde(rename = "consumerGroup")]
    consumer_group: String,
    #[schemars(extend("maxItems" = 0))]
    messages: [(); 0],
    /// The partition's window buffer is still filling.
    #[serde(rename = "windowBufferActive", skip_serializing_if = "Option::is_none")]
    window_buffer_active: Option<True>,
    /// Pop maintenance is on (`/api/v1/system/maintenance/pop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    paused: Option<True>,
    #[serde(skip_serializing_if = "Option::is_none")]
    autopilot: Option<AutopilotEcho>,
}

/// Nothing claimable now.
#[derive(Serialize, JsonSchema)]
struct NothingOut {
    #[schemars(extend("const" = false))]
    success: bool,
    /// `no_available_partition`: nothing claimable (or an unknown queue);
    /// `partition_not_found`: the named partition does not exist; `lease_held`: another
    /// consumer of the group holds the named partition. Under `wait=true` these become a
    /// retry loop and, at the deadline, the empty shape.
    #[schemars(extend("enum" = ["no_available_partition", "partition_not_found", "lease_held"]))]
    error: &'static str,
    #[schemars(extend("maxItems" = 0))]
    messages: [(); 0],
    #[serde(skip_serializing_if = "Option::is_none")]
    autopilot: Option<AutopilotEcho>,
}

/// Only with `autopilot=true`: the batch and partitions the broker used for the knobs the
/// request left out.
#[derive(Serialize, JsonSchema)]
struct AutopilotEcho {
    partitions: i64,
    batch: i64,
    /// Advice before the next poll; always 0.
    #[serde(rename = "waitMs")]
    wait_ms: u64,
}

impl Echo {
    fn autopilot(&self) -> Option<AutopilotEcho> {
        self.autopilot.then_some(AutopilotEcho {
            partitions: self.partitions,
            batch: self.batch,
            wait_ms: 0,
        })
    }
}

fn answer(popped: Popped, req: &PopRequest, echo: &Echo) -> Response {
    let empty = |partition_id, lease_id| EmptyOut {
        success: True,
        queue: req.target.queue_name().to_string(),
        partition: req.target.partition_name().unwrap_or("").to_string(),
        partition_id,
        lease_id,
        consumer_group: req.group.clone(),
        messages: [],
        window_buffer_active: None,
        paused: None,
        autopilot: echo.autopilot(),
    };
    match popped {
        Popped::Delivered(d) => delivered(d, req, echo),
        Popped::Nothing(code) => Answer(NothingOut {
            success: false,
            error: code,
            messages: [],
            autopilot: echo.autopilot(),
        })
        .into_response(),
        Popped::Empty {
            partition_id,
            window_buffer,
        } => Answer(EmptyOut {
            window_buffer_active: window_buffer.then_some(True),
            ..empty(partition_id, Some(""))
        })
        .into_response(),
        Popped::TimedOut => Answer(empty(None, None)).into_response(),
        Popped::Paused => Answer(EmptyOut {
            paused: Some(True),
            ..empty(None, None)
        })
        .into_response(),
    }
}

/// One delivered message. Written straight to the wire with its payload as the JSON text
/// stored, so its keys come in this declared order.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct MessageOut<'a> {
    id: Uuid,
    transaction_id: &'a str,
    trace_id: Option<Uuid>,
    /// The payload as pushed (the key is `data` here, `payload` on the message routes).
    #[schemars(with = "Value")]
    data: &'a RawValue,
    /// The pushing token's `sub`; null with authentication off.
    producer_sub: Option<&'a str>,
    /// Microseconds, as Queen's pop.
    created_at: Micros,
    /// What an ack must name (with `transactionId`).
    partition_id: Uuid,
    partition: &'a str,
    queue: &'a str,
    /// The lease to ack under; `""` for an `autoAck` pop (nothing to ack).
    lease_id: &'a str,
    consumer_group: &'a str,
}

/// Messages under one lease, in the declared key order (see [`MessageOut`]).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct MessagesOut<'a> {
    success: True,
    /// The first claimed partition's queue.
    queue: &'a str,
    /// The first claimed partition; each message names its own.
    partition: &'a str,
    partition_id: Uuid,
    /// One lease for every partition of the answer (one extend renews them all); `""` for
    /// `autoAck`.
    lease_id: &'a str,
    consumer_group: &'a str,
    partitions_claimed: usize,
    #[schemars(extend("minItems" = 1))]
    messages: Vec<MessageOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    autopilot: Option<AutopilotEcho>,
}

/// The answer with messages, serialised once: payloads go out as the JSON text stored. The
/// lease is handed over with its last bytes.
fn delivered(d: Delivery, req: &PopRequest, echo: &Echo) -> Response {
    let lease = d.lease_id.map(|l| l.to_string()).unwrap_or_default();
    let messages = d
        .partitions
        .iter()
        .flat_map(|part| {
            part.messages.iter().map(|m| MessageOut {
                id: m.message.message_id,
                transaction_id: &m.message.transaction_id,
                trace_id: m.message.trace_id,
                data: &m.message.payload,
                producer_sub: m.message.producer_sub.as_deref(),
                created_at: Micros(m.created_at),
                partition_id: part.partition_id,
                partition: &part.partition,
                queue: &part.queue,
                lease_id: &lease,
                consumer_group: &req.group,
            })
        })
        .collect();
    let first = &d.partitions[0];
    let body = MessagesOut {
        success: True,
        queue: &first.queue,
        partition: &first.partition,
        partition_id: first.partition_id,
        lease_id: &lease,
        consumer_group: &req.group,
        partitions_claimed: d.partitions.len(),
        messages,
        autopilot: echo.autopilot(),
    };
    let json = serde_json::to_string(&body).expect("the answer serialises");
    respond(json, d.handover)
}
